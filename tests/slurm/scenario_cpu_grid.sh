#!/usr/bin/env bash
# Real Slurm, real gridrun-train: a small CPU grid with 1- and 2-rank jobs (srun --mpi=pmix) plus one
# job that fails at start (missing data set) is submitted; `gridrun status` reports the four good
# jobs completed and the bad one failed; the afterany collect job still builds results.h5 (read back
# with h5py); a second submit submits only the failed job; after a result is lost, a third submit
# submits exactly that job and the failed one; `gridrun cancel` leaves nothing in squeue.
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
include:
  - {dataset: mnist, data_dir: /nonexistent/mnist, lr: 0.2}
YAML
RUN="$WORK/runs/slurm-cpu"

note "submit"
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$WORK/runs" --time 5 | tee "$WORK/submit1.txt"
grep -q "5 job(s) submitted" "$WORK/submit1.txt" || fail "expected 5 jobs submitted"
scripts=("$RUN"/slurm/s1-*.sbatch)
[[ ${#scripts[@]} -eq 3 ]] || fail "expected 2 arrays + collect script"
bad_id=$(grep -l '"mnist"' "$RUN"/jobs/*.json | xargs basename | sed 's/.json$//')
wait_until 240 "all jobs and the collect job to leave squeue" run_drained "$RUN"

note "status"
"$BIN/gridrun" status "$RUN"
"$BIN/gridrun" status "$RUN" --format json >"$WORK/status.json"
"$PY" - "$WORK/status.json" "$bad_id" <<'PYEOF'
import json, sys
st = json.load(open(sys.argv[1]))
bad_id = sys.argv[2]
states = {j["id"]: j["state"] for j in st["jobs"]}
assert len(states) == 5, states
assert states.pop(bad_id) == "failed", st["jobs"]
assert all(v == "completed" for v in states.values()), f"not completed: {states}"
for j in st["jobs"]:
    assert j["slurm_state"] == ("FAILED" if j["id"] == bad_id else "COMPLETED"), j
assert st["counts"] == {"completed": 4, "failed": 1}, st["counts"]
assert st["collect_state"] == "COMPLETED", st["collect_state"]
PYEOF

note "results.h5 from the collect job"
ls "$RUN"/logs/collect-*.out >/dev/null || fail "collect job left no log"
[[ -f "$RUN/results.h5" ]] || { cat "$RUN"/logs/collect-*.out >&2; fail "no results.h5"; }
"$PY" - "$RUN/results.h5" <<'PYEOF'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    jobs = f["jobs"]
    n = len(jobs["id"]) if isinstance(jobs, h5py.Group) else len(jobs)
    status = jobs["status"][...] if isinstance(jobs, h5py.Group) else jobs["status"]
    status = [s.decode() if isinstance(s, bytes) else str(s) for s in status]
    # the failed job is indexed only if it got as far as writing a results file
    assert n in (4, 5) and status.count("completed") == 4, status
print(f"results.h5: {n} jobs, 4 completed")
PYEOF

note "resubmission: only the failed job"
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$WORK/runs" --time 5 | tee "$WORK/submit2.txt"
grep -q "1 job(s) submitted" "$WORK/submit2.txt" || fail "second submit should submit only the failed job"
[[ "$(cat "$RUN"/slurm/s2-*.jobs)" == "$bad_id" ]] || fail "second submission is not just $bad_id"
wait_until 120 "resubmitted failed job to finish" run_drained "$RUN"

note "resubmission: the job whose result is gone (and the failed one)"
lost=$(find "$RUN/results" -name '*.h5' | sort | head -1)
lost_id=$(basename "$lost" .h5)
rm -f "$lost"
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$WORK/runs" --time 5 | tee "$WORK/submit3.txt"
grep -q "2 job(s) submitted" "$WORK/submit3.txt" || fail "expected exactly 2 jobs resubmitted"
grep -qx "$lost_id" "$RUN"/slurm/s3-*.jobs || fail "resubmitted lists do not hold $lost_id"
grep -qx "$bad_id" "$RUN"/slurm/s3-*.jobs || fail "resubmitted lists do not hold $bad_id"
wait_until 180 "resubmitted jobs to finish" run_drained "$RUN"
[[ -f "$lost" ]] || fail "resubmitted job did not write $lost"
"$BIN/gridrun" status "$RUN" --format csv | tee "$WORK/status.csv"
[[ $(grep -c ",completed," "$WORK/status.csv") -eq 4 ]] || fail "not all 4 good jobs completed"

note "cancel"
rm -f "$RUN"/results/*.h5
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$WORK/runs" --time 5 --throttle 1 |
  tee "$WORK/submit4.txt"
grep -q "5 job(s) submitted" "$WORK/submit4.txt" || fail "expected 5 jobs submitted for cancel"
"$BIN/gridrun" cancel "$RUN" --wait 60
run_drained "$RUN" || fail "squeue still lists jobs of the run after cancel"
"$BIN/gridrun" status "$RUN"
echo "PASS"
