#!/usr/bin/env bash
# Real Slurm, real gridrun-train: a small CPU grid with 1- and 2-rank jobs (srun --mpi=pmix) is
# submitted, completes, `gridrun status` reports every job completed, the afterany collect job
# builds results.h5 (read back with h5py), a second submit submits nothing, a lost result is the only
# job submitted again, and `gridrun cancel` leaves nothing in squeue.
#   scenario_cpu_grid.sh BIN_DIR WORK_DIR PYTHON
source "$(dirname "$0")/lib.sh"
BIN=$1 WORK=$2 PY=$3
require_cluster
require_train "$BIN/gridrun-train"
rm -rf "$WORK" && mkdir -p "$WORK"
cat >"$WORK/grid.yaml" <<'YAML'
name: slurm-cpu
defaults:
  dataset: synthetic
  model: mlp
  epochs: 1
  train_samples: 256
  test_samples: 64
  batch_per_rank: 32
  device: cpu
  threads_per_rank: 1
grid:
  ranks: [1, 2]
  lr: [0.05, 0.1]
YAML
RUN="$WORK/runs/slurm-cpu"

note "submit"
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$WORK/runs" --time 5 | tee "$WORK/submit1.txt"
grep -q "4 job(s) submitted" "$WORK/submit1.txt" || fail "expected 4 jobs submitted"
[[ $(ls "$RUN"/slurm/s1-*.sbatch | wc -l) -eq 3 ]] || fail "expected 2 arrays + collect script"
wait_until 240 "all jobs and the collect job to leave squeue" run_drained "$RUN"

note "status"
"$BIN/gridrun" status "$RUN"
"$BIN/gridrun" status "$RUN" --format json >"$WORK/status.json"
"$PY" - "$WORK/status.json" <<'PYEOF'
import json, sys
st = json.load(open(sys.argv[1]))
states = {j["id"]: j["state"] for j in st["jobs"]}
assert len(states) == 4, states
bad = {k: v for k, v in states.items() if v != "completed"}
assert not bad, f"not completed: {bad}"
assert all(j["slurm_state"] == "COMPLETED" for j in st["jobs"]), st["jobs"]
assert st["counts"] == {"completed": 4}, st["counts"]
PYEOF

note "results.h5 from the collect job"
ls "$RUN"/logs/collect-*.out >/dev/null || fail "collect job left no log"
[[ -f "$RUN/results.h5" ]] || { cat "$RUN"/logs/collect-*.out >&2; fail "no results.h5"; }
"$PY" - "$RUN/results.h5" <<'PYEOF'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    jobs = f["jobs"]
    n = len(jobs["id"]) if isinstance(jobs, h5py.Group) else len(jobs)
    assert n == 4, f"results.h5 /jobs has {n} rows"
    status = jobs["status"][...] if isinstance(jobs, h5py.Group) else jobs["status"]
    status = [s.decode() if isinstance(s, bytes) else str(s) for s in status]
    assert all(s == "completed" for s in status), status
print("results.h5: 4 completed jobs")
PYEOF

note "resubmission: nothing to do"
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$WORK/runs" --time 5 | tee "$WORK/submit2.txt"
grep -q "nothing to submit" "$WORK/submit2.txt" || fail "second submit should submit nothing"
[[ -z "$(submission_ids "$RUN" 2)" ]] || fail "second submit called sbatch"

note "resubmission: only the job whose result is gone"
lost=$(ls "$RUN"/results/*.h5 | head -1)
lost_id=$(basename "$lost" .h5)
rm -f "$lost"
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$WORK/runs" --time 5 | tee "$WORK/submit3.txt"
grep -q "1 job(s) submitted" "$WORK/submit3.txt" || fail "expected exactly 1 job resubmitted"
grep -qx "$lost_id" "$RUN"/slurm/s2-*.jobs || fail "resubmitted list does not hold $lost_id"
wait_until 180 "resubmitted job to finish" run_drained "$RUN"
[[ -f "$lost" ]] || fail "resubmitted job did not write $lost"
"$BIN/gridrun" status "$RUN" --format csv | tee "$WORK/status.csv"
[[ $(grep -c ",completed," "$WORK/status.csv") -eq 4 ]] || fail "not all 4 completed after resubmission"

note "cancel"
rm -f "$RUN"/results/*.h5
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$WORK/runs" --time 5 --throttle 1 |
  tee "$WORK/submit4.txt"
grep -q "4 job(s) submitted" "$WORK/submit4.txt" || fail "expected 4 jobs submitted for cancel"
"$BIN/gridrun" cancel "$RUN" --wait 60
run_drained "$RUN" || fail "squeue still lists jobs of the run after cancel"
"$BIN/gridrun" status "$RUN"
echo "PASS"
