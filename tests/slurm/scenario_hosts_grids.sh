#!/usr/bin/env bash
# Real Slurm on 3 hosts (local-cluster.sh start --nodes 3: host1 and host2 with 4 fake GPUs each,
# host3 with none), real gridrun-train. Four submissions run side by side, as users' would:
#  1. spread: a 12-job CPU grid lands on at least two hosts, all complete, results.h5 holds 12.
#  2. span: a job with ranks 2, nodes 2 runs its ranks on two hosts over the cluster's network
#     (--network eth0) and its per-step losses equal those of the same job on one host (1e-6).
#  3. gpu: GPU-shaped arrays (the stand-in trainer fake-gpu-train.sh) run only on GPU hosts, and
#     --pack-nodes fills both GPU hosts with disjoint CUDA_VISIBLE_DEVICES within each host.
#  6. compare: examples/large-vs-small-cluster.yaml (compare by nodes), first calibrated through
#     Slurm on the quiet cluster (`gridrun calibrate --slurm --cluster`: each configuration alone,
#     then the side-by-side groups) and predicted (`gridrun simulate --cluster`), then through
#     gridrun submit: the phases run one after another, the report's phase table has finite
#     makespan, samples/s, time to target and the prediction for both, and the verdict says
#     what was predicted.
# Every wait is on Slurm's queue or on files, with a deadline (lib.sh wait_until).
#   scenario_hosts_grids.sh BIN_DIR WORK_DIR PYTHON
source "$(dirname "$0")/lib.sh"
BIN=$1 WORK=$2 PY=$3
HERE=$(cd "$(dirname "$0")" && pwd)
EXAMPLES=$(cd "$HERE/../../examples" && pwd)
require_cluster
require_train "$BIN/gridrun-train"
rm -rf "$WORK" && mkdir -p "$WORK"
[[ $(sinfo -h -N -o %N | sort -u | wc -l) -eq 3 ]] || fail "expected the 3-host cluster"

cat >"$WORK/spread.yaml" <<'YAML'
name: hosts-spread
defaults: {dataset: synthetic, model: mlp, epochs: 1, train_samples: 256, test_samples: 64,
           batch_per_rank: 32, device: cpu, ranks: 1}
grid:
  seed: [0, 1, 2, 3, 4, 5]
  lr: [0.05, 0.1]
YAML
cat >"$WORK/span.yaml" <<'YAML'
name: hosts-span
defaults: {dataset: synthetic, model: mlp, epochs: 2, train_samples: 512, test_samples: 128,
           global_batch: 32, device: cpu, ranks: 2, seed: 4}
grid:
  nodes: [2, 1]
YAML
cat >"$WORK/gpu.yaml" <<'YAML'
name: hosts-gpu
defaults: {device: gpu, threads_per_rank: 1, dataset: synthetic, model: mlp}
grid:
  seed: [0, 1, 2, 3]
include:
  - {ranks: 2, seed: 9}
YAML
cat >"$WORK/packed.yaml" <<'YAML'
name: hosts-packed
defaults: {device: gpu, ranks: 1, threads_per_rank: 1, dataset: synthetic, model: mlp}
grid:
  seed: [0, 1, 2, 3]
YAML

RUNS="$WORK/runs"
note "6a. calibrate the compare grid through Slurm, predict it on the 3 hosts"
cat >"$WORK/cluster.yaml" <<'YAML'
nodes:
  - {name: host1, cores: 2, gpus: 4}
  - {name: host2, cores: 2, gpus: 4}
  - {name: host3, cores: 2}
YAML
"$BIN/gridrun" calibrate "$EXAMPLES/large-vs-small-cluster.yaml" --slurm --cluster "$WORK/cluster.yaml" \
  --network eth0 --steps 5 --out "$RUNS" | tee "$WORK/calibrate.txt"
grep -q "2 configuration(s) of 4 jobs" "$WORK/calibrate.txt" || fail "calibrate did not measure the 2 configurations"
grep -q "side by side:" "$WORK/calibrate.txt" || fail "calibrate co-ran no side-by-side group"
"$BIN/gridrun" simulate "$EXAMPLES/large-vs-small-cluster.yaml" --cluster "$WORK/cluster.yaml" --out "$RUNS" \
  --format json >"$WORK/predicted.json"
"$PY" - "$WORK/predicted.json" "$RUNS/large-vs-small-cluster/calibration.json" <<'PYEOF'
import json, sys
pred, cal = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert cal["host"] == "slurm" and len(cal["configs"]) == 2, cal
assert pred["durations"].startswith("calibration of"), pred["durations"]
assert sorted(pred["phases"]) == ["1", "2"] and all(p["makespan_s"] > 0 for p in pred["phases"].values()), pred
print("predicted:", {k: round(v["makespan_s"], 2) for k, v in pred["phases"].items()})
PYEOF
submit() { "$BIN/gridrun" submit "$@" --slurm --out "$RUNS" --time 10 | tee -a "$WORK/submit.txt"; }
note "submit: spread, span, gpu, packed, compare"
submit "$WORK/spread.yaml"
submit "$WORK/span.yaml" --network eth0
submit "$WORK/gpu.yaml" --train-bin "$HERE/fake-gpu-train.sh"
# Each packed step waits until all 4 have started (the stand-in's MIN_PEERS, through sbatch's
# exported environment): the two whole-node bundles must then run at the same time, so on both
# GPU hosts, however busy the other submissions keep the cluster.
GRIDRUN_TEST_MIN_PEERS=4 submit "$WORK/packed.yaml" --pack-nodes --node-gpus 4 --node-cores 2 \
  --train-bin "$HERE/fake-gpu-train.sh"
submit "$EXAMPLES/large-vs-small-cluster.yaml" --network eth0
grep -q -- "--dependency=afterany" "$WORK/submit.txt" || fail "the compare phases were not chained"
all_drained() {
  local r
  for r in hosts-spread hosts-span hosts-gpu hosts-packed large-vs-small-cluster; do
    run_drained "$RUNS/$r" || return 1
  done
}
wait_until 420 "every array and collect job to leave squeue" all_drained

note "1. spread: 12 jobs over at least two hosts, all completed, results.h5 holds 12"
"$BIN/gridrun" status "$RUNS/hosts-spread" --format json >"$WORK/spread-status.json"
"$PY" - "$WORK/spread-status.json" "$RUNS/hosts-spread" <<'PYEOF'
import glob, json, os, sys
import h5py
st, run = json.load(open(sys.argv[1])), sys.argv[2]
assert st["counts"] == {"completed": 12}, st["counts"]
hosts = set()
for path in glob.glob(os.path.join(run, "results", "*.h5")):
    with h5py.File(path, "r") as f:
        hosts.add(f.attrs["hostname"])
        assert f["attempts/hostname"].asstr()[0] == f.attrs["hostname"], path
assert len(hosts) >= 2, f"all 12 jobs ran on {hosts}"
with h5py.File(os.path.join(run, "results.h5"), "r") as f:
    jobs = f["jobs"]
    n = len(jobs["id"]) if isinstance(jobs, h5py.Group) else len(jobs)
assert n == 12, f"results.h5 holds {n} jobs"
print(f"12 jobs completed on {sorted(hosts)}; results.h5 holds 12")
PYEOF
# The index above is the submission's collect job's; `gridrun collect` by hand rebuilds the same.
"$BIN/gridrun" collect "$RUNS/hosts-spread" 2>&1 | tee "$WORK/collect.txt"
grep -q "indexed 12 job(s)" "$WORK/collect.txt" || fail "gridrun collect did not index the 12 jobs"

note "2. span: ranks 2 over nodes 2 on two hosts, losses equal to ranks 2 on one host"
"$PY" - "$RUNS/hosts-span" <<'PYEOF'
import glob, json, os, sys
import h5py, numpy as np
run = sys.argv[1]
files = {}
for path in glob.glob(os.path.join(run, "results", "*.h5")):
    with h5py.File(path, "r") as f:
        files[int(f.attrs["param.nodes"])] = (str(f.attrs["hostnames"]), f["steps/loss"][:],
                                              str(f.attrs["status"]))
assert sorted(files) == [1, 2], files.keys()
hosts2, loss2, st2 = files[2]
hosts1, loss1, st1 = files[1]
assert st1 == st2 == "completed", (st1, st2)
assert len(set(hosts2.split(","))) == 2, f"nodes=2 job ran on {hosts2}"
assert len(set(hosts1.split(","))) == 1, f"nodes=1 job ran on {hosts1}"
assert len(loss1) == len(loss2) > 0, (len(loss1), len(loss2))
rel = float(np.max(np.abs(loss2 - loss1) / np.maximum(np.abs(loss1), 1e-12)))
assert rel <= 1e-6, f"per-step losses differ by {rel:.3g} relative"
print(f"nodes=2 on {hosts2}, nodes=1 on {hosts1}: {len(loss1)} steps, max relative difference {rel:.3g}")
PYEOF
grep -q "^#SBATCH --ntasks-per-node=1$" "$RUNS"/hosts-span/slurm/s1-*-n2.sbatch || fail "no --ntasks-per-node=1"
grep -q "^export OMPI_MCA_btl_tcp_if_include=eth0$" "$RUNS"/hosts-span/slurm/s1-*-n2.sbatch ||
  fail "--network did not reach the script"

note "3. gpu: GPU-shaped jobs only on GPU hosts; packed bundles fill both GPU hosts"
# RUN EXPECTED_JOBS MIN_HOSTS MIN_OVERLAPS: every rank on a GPU host with as many devices as ranks,
# and no two jobs that overlap in time on one host share a device. MIN_OVERLAPS is how many such
# same-host pairs there must be. The plain array asks for none: its 1-rank tasks only wait for a
# second one to start (fake-gpu-train.sh), which with two GPU hosts may run on the other host (seen:
# the four tasks on host2, host1, host1, host2 with no same-host overlap); waiting for a same-host
# peer could deadlock (the last task placed on the emptied host). The packed bundles make it
# certain: each of their steps waits for all four, so the two steps of each bundle overlap.
gpu_check() {
  "$PY" - "$@" <<'PYEOF'
import glob, json, os, sys
run, expected, min_hosts, min_overlaps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
recs = []
for path in glob.glob(os.path.join(run, "gpucheck", "*.rec")):
    jid, rank, cvd, t0, t1, sjob, host = open(path).read().split()[:7]
    ranks = json.load(open(os.path.join(run, "jobs", jid + ".json")))["params"]["ranks"]
    devs = cvd.split(",") if cvd != "unset" else []
    assert len(devs) == ranks, f"{jid} rank {rank}: CUDA_VISIBLE_DEVICES={cvd}, job has {ranks} ranks"
    assert host in ("host1", "host2"), f"{jid} rank {rank} ran on {host}, which has no GPUs"
    recs.append((jid, host, set(devs), float(t0), float(t1)))
jobs = {r[0] for r in recs}
assert len(jobs) == expected, f"{len(jobs)} jobs recorded, expected {expected}"
hosts = {r[1] for r in recs}
assert len(hosts) >= min_hosts, f"jobs ran on {hosts} only"
overlaps = 0
for i, a in enumerate(recs):
    for b in recs[i + 1:]:
        if a[0] == b[0] or a[1] != b[1] or a[4] <= b[3] or b[4] <= a[3]:
            continue
        overlaps += 1
        assert not (a[2] & b[2]), f"{a[0]} and {b[0]} overlap in time on {a[1]} devices {a[2] & b[2]}"
assert overlaps >= min_overlaps, (f"{overlaps} same-host pairs of jobs overlapped in time, expected "
                                  f"at least {min_overlaps}: disjointness not exercised")
print(f"{len(recs)} rank records of {len(jobs)} jobs on {sorted(hosts)}, {overlaps} overlapping pairs, "
      "devices disjoint within each host")
PYEOF
}
gpu_check "$RUNS/hosts-gpu" 5 1 0
[[ $(wc -l <"$RUNS"/hosts-packed/slurm/s1-a0-gpu-packed.jobs) -eq 2 ]] || fail "expected 2 bundles of 2 steps"
gpu_check "$RUNS/hosts-packed" 4 2 2

note "6. compare: phases one after another, the report's phase table"
CMP="$RUNS/large-vs-small-cluster"
"$BIN/gridrun" collect "$CMP" --quiet
"$BIN/gridrun" report "$CMP" --format json >"$WORK/report.json"
"$BIN/gridrun" report "$CMP" | sed -n '/phases)/,$p'
"$PY" - "$WORK/report.json" "$CMP" <<'PYEOF'
import glob, json, math, os, re, sys
import h5py
report, run = json.load(open(sys.argv[1]))["tables"], sys.argv[2]
(table,) = [t for t in report if t["title"].startswith("Phases (")]
rows = {r["phase"]: r for r in table["rows"]}
assert sorted(rows) == ["nodes=1", "nodes=2"], rows.keys()
# One submission, no requeue: each phase ran in one sitting, so it is a measurement.
assert all(r["ran"] != "not measured" for r in rows.values()), rows
(verdict,) = [t for t in report if t["title"] == "Verdict"]
assert any(re.search(r" faster( \(predicted [^)]*\))?\.$", r["verdict"]) for r in verdict["rows"]), verdict
assert any("(predicted" in r["verdict"] for r in verdict["rows"]), verdict
for phase, r in rows.items():
    for col in ("makespan_s", "samples/s", "time_to_target_s", "predicted_s"):
        assert isinstance(r[col], (int, float)) and math.isfinite(r[col]) and r[col] > 0, (phase, col, r)
# The phases did not overlap: every nodes=1 job started after every nodes=2 job ended.
span = {}
for path in glob.glob(os.path.join(run, "results", "*.h5")):
    with h5py.File(path, "r") as f:
        span.setdefault(str(f.attrs["meta.phase"]), []).append(
            (float(f.attrs["start_unix"]), float(f.attrs["end_unix"])))
assert max(e for _, e in span["2"]) <= min(s for s, _ in span["1"]), span
print("phases:", {p: (r["makespan_s"], r["samples/s"], r["time_to_target_s"]) for p, r in rows.items()})
PYEOF
echo "PASS"
