#!/usr/bin/env bash
# Real Slurm, real gridrun-train: a job with a 1-minute time limit gets Slurm's USR1 warning
# (--signal=B:USR1@59) in the batch shell, which forwards it; the runner checkpoints and exits 75;
# the script requeues the task; on restart it runs with --resume and completes. Its final losses
# equal those of the same job run uninterrupted (directly, outside Slurm, at the same time).
#   scenario_requeue.sh BIN_DIR WORK_DIR PYTHON
source "$(dirname "$0")/lib.sh"
BIN=$1 WORK=$2 PY=$3
require_cluster
require_train "$BIN/gridrun-train"
rm -rf "$WORK" && mkdir -p "$WORK"
# The warning is due 1 s after start, but slurmctld checks time limits only every 30 s, so it
# arrives within ~31 s. The job (6,144 steps, ~50 s on an idle core of this 2-core VM, minutes
# when the machine is loaded) must outlast that; each requeue resumes from the checkpoint the
# runner wrote on the signal, so every attempt makes progress.
cat >"$WORK/grid.yaml" <<'YAML'
name: slurm-requeue
defaults:
  dataset: synthetic
  model: mlp
  epochs: 24
  train_samples: 4096
  test_samples: 256
  batch_per_rank: 16
  device: cpu
  ranks: 1
  threads_per_rank: 1
  time_limit: "1"
  seed: 3
grid:
  lr: [0.05]
YAML
RUN="$WORK/runs/slurm-requeue"
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$WORK/runs" --signal B:USR1@59
id=$(basename "$RUN"/jobs/*.json .json)

note "uninterrupted reference run of job $id (outside Slurm)"
mkdir -p "$WORK/ref/results"
"$BIN/gridrun-train" --job "$RUN/jobs/$id.json" --out "$WORK/ref/results" --quiet \
  >"$WORK/ref.out" 2>&1 || { cat "$WORK/ref.out" >&2; fail "reference run failed"; }

wait_until 480 "the requeued job and collect to finish" run_drained "$RUN"
"$BIN/gridrun" status "$RUN" --format json | tee "$WORK/status.json"
cat "$RUN"/logs/slurm-*.out
"$PY" - "$WORK/status.json" "$RUN/results/$id.h5" "$WORK/ref/results/$id.h5" <<'PYEOF'
import json, sys, h5py, numpy as np
st = json.load(open(sys.argv[1]))
(job,) = st["jobs"]
assert job["state"] == "completed", job
assert job["restarts"] >= 1, f"never requeued: {job} (machine too fast for the time limit?)"
def final(path):
    with h5py.File(path, "r") as f:
        assert f.attrs["status"] in ("completed", b"completed"), f.attrs["status"]
        resumed = int(f.attrs.get("resumed_from_step", 0))
        e = f["epochs"]
        rows = int(f["epochs/rows"][()]) if "rows" in e else len(e["epoch"])
        d = {k: np.asarray(e[k][:rows]) for k in ("epoch", "train_loss", "test_loss", "test_acc")}
        d["resumed"] = resumed
        return d
a, b = final(sys.argv[2]), final(sys.argv[3])
assert a["resumed"] > 0, "the requeued run did not resume from a checkpoint"
assert b["resumed"] == 0
assert a["epoch"][-1] == b["epoch"][-1], (a["epoch"][-1], b["epoch"][-1])
for k in ("train_loss", "test_loss", "test_acc"):
    assert abs(a[k][-1] - b[k][-1]) <= 1e-6 * max(1.0, abs(b[k][-1])), (k, a[k][-1], b[k][-1])
print(f"requeued {job['restarts']}x, resumed at step {a['resumed']}; final test_loss {a['test_loss'][-1]:.6f} == {b['test_loss'][-1]:.6f}")
PYEOF
grep -q -- "--resume" "$RUN"/logs/slurm-*.out || fail "restart did not pass --resume"
echo "PASS"
