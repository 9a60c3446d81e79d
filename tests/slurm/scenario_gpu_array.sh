#!/usr/bin/env bash
# Real Slurm, fake GPUs (GRES files made by local-cluster.sh): a GPU-shaped job array and a packed
# (--pack-nodes) submission whose tasks only record CUDA_VISIBLE_DEVICES (fake-gpu-train.sh). Checks:
# every rank sees as many devices as its job has ranks, and tasks/steps that overlap in time never
# share a device.
#   scenario_gpu_array.sh BIN_DIR WORK_DIR PYTHON
source "$(dirname "$0")/lib.sh"
BIN=$1 WORK=$2 PY=$3
HERE=$(cd "$(dirname "$0")" && pwd)
require_cluster
rm -rf "$WORK" && mkdir -p "$WORK"
check() {  # check RUN_DIR EXPECTED_JOBS
  "$PY" - "$1" "$2" <<'PYEOF'
import glob, json, os, sys
run, expected = sys.argv[1], int(sys.argv[2])
recs = []
for path in glob.glob(os.path.join(run, "gpucheck", "*.rec")):
    jid, rank, cvd, t0, t1, sjob = open(path).read().split()[:6]
    ranks = json.load(open(os.path.join(run, "jobs", jid + ".json")))["params"]["ranks"]
    devs = cvd.split(",") if cvd != "unset" else []
    assert len(devs) == ranks, f"{jid} rank {rank}: CUDA_VISIBLE_DEVICES={cvd}, job has {ranks} ranks"
    assert len(set(devs)) == len(devs), f"{jid}: repeated device in {cvd}"
    recs.append((jid, int(rank), set(devs), float(t0), float(t1), sjob))
jobs = {r[0] for r in recs}
assert len(jobs) == expected, f"{len(jobs)} jobs recorded, expected {expected}"
overlaps = 0
for i, a in enumerate(recs):
    for b in recs[i + 1:]:
        if a[0] == b[0] or a[4] <= b[3] or b[4] <= a[3]:
            continue
        overlaps += 1
        # task/none: Slurm's device numbers are the node's, in every allocation and step alike.
        assert not (a[2] & b[2]), f"{a[0]} and {b[0]} overlap in time on devices {a[2] & b[2]}"
assert overlaps > 0, "no two jobs overlapped in time: disjointness not exercised"
print(f"{len(recs)} rank records, {len(jobs)} jobs, {overlaps} overlapping pairs, devices disjoint")
PYEOF
}

note "GPU-shaped array: 4 one-GPU jobs and 1 two-GPU job"
cat >"$WORK/gpu.yaml" <<'YAML'
name: slurm-gpu
defaults: {device: gpu, threads_per_rank: 1, dataset: synthetic, model: mlp}
grid:
  seed: [0, 1, 2, 3]
include:
  - {ranks: 2, seed: 9}
YAML
"$BIN/gridrun" submit "$WORK/gpu.yaml" --slurm --out "$WORK/runs" --time 5 \
  --train-bin "$HERE/fake-gpu-train.sh" | tee "$WORK/submit.txt"
RUN="$WORK/runs/slurm-gpu"
grep -q "#SBATCH --gres=gpu:1" "$RUN"/slurm/s1-a0-*.sbatch || fail "no --gres=gpu:1 in the 1-GPU array"
wait_until 300 "GPU array to finish" run_drained "$RUN"
check "$RUN" 5

note "packed: 1-GPU jobs as concurrent srun --exact steps of whole-node allocations"
cat >"$WORK/packed.yaml" <<'YAML'
name: slurm-packed
defaults: {device: gpu, ranks: 1, threads_per_rank: 1, dataset: synthetic, model: mlp}
grid:
  seed: [0, 1, 2, 3]
YAML
"$BIN/gridrun" submit "$WORK/packed.yaml" --slurm --out "$WORK/runs" --time 5 --pack-nodes \
  --node-cores 2 --train-bin "$HERE/fake-gpu-train.sh" | tee "$WORK/submit-packed.txt"
RUN="$WORK/runs/slurm-packed"
ls "$RUN"/slurm/s1-a0-gpu-packed.sbatch >/dev/null || fail "no packed array script"
[[ $(wc -l <"$RUN"/slurm/s1-a0-gpu-packed.jobs) -eq 2 ]] || fail "expected 2 bundles of 2 steps (2 cores per node)"
wait_until 300 "packed array to finish" run_drained "$RUN"
check "$RUN" 4
echo "PASS"
