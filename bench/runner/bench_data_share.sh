#!/usr/bin/env bash
# Input pipeline cost (issue 15): the share of step time the training thread waits for its next
# batch (`/steps/data_s` over `/steps/step_s`), lenet on Fashion-MNIST (Debian's files), batch 64,
# 1 rank bound to 1 core (the Loader's thread shares it), 300 steps (the first 20 left out), for
# augment none and crop_flip, N seeds each, one job at a time. Prints each run and the medians.
#   usage: bench/runner/bench_data_share.sh build/bin/gridrun [N=5] [OUT=/tmp/gridrun-data-share]
set -euo pipefail
gridrun=$(realpath "$1"); n=${2:-5}; out=${3:-/tmp/gridrun-data-share}
seeds=$(seq -s, 0 $((n - 1)))
rm -rf "$out"; mkdir -p "$out"
cat >"$out/grid.yaml" <<YAML
name: data-share
defaults: {dataset: fashion-mnist, model: lenet, batch_per_rank: 64, max_steps: 300, epochs: 0,
           lr: 0.01, threads_per_rank: 1, eval_every: 0, timing_warmup_steps: 20}
grid:
  augment: [none, crop_flip]
seeds: [$seeds]
YAML
"$gridrun" run "$out/grid.yaml" --out "$out" --max-parallel 1 --no-report >"$out/run.log" 2>&1 ||
  { tail -20 "$out/run.log"; exit 1; }
/usr/bin/python3 - "$out/data-share/results" <<'PY'
import glob, statistics, sys, h5py
rows = {}
for path in sorted(glob.glob(sys.argv[1] + "/*.h5")):
    with h5py.File(path, "r") as f:
        aug = f.attrs["param.augment"]
        aug = aug.decode() if isinstance(aug, bytes) else str(aug)
        seed = int(f.attrs["param.seed"])
        st = f["steps"]
        data, step = st["data_s"][20:], st["step_s"][20:]
        share = float(data.sum() / step.sum())
        rows.setdefault(aug, []).append((share, float(statistics.median(step))))
        print(f"{aug:10s} seed {seed}: data share {100 * share:5.2f} %, step median {1e3 * statistics.median(step):.2f} ms")
for aug, v in rows.items():
    print(f"median of {len(v)}: {aug:10s} data share {100 * statistics.median(s for s, _ in v):.2f} %, "
          f"step {1e3 * statistics.median(t for _, t in v):.2f} ms")
PY
