#!/usr/bin/env bash
# Issue 48 on real Slurm: `submit --launch warm --jobs-per-task 3` runs each array task's jobs one
# after another in one warm worker (gridrun-train --worker, fed through named pipes by the task
# body). The same grid is submitted cold (one job per task) into another runs directory; then:
#   - every job completed in both, and the per-step and epoch losses are equal bit for bit (h5py);
#   - in the warm run, the first job of each task launched cold and the others ran warm
#     (/summary/launch_warm), each with its own log;
#   - a job that fails in the warm worker (its data set is missing) is launched again cold, fails
#     there too and is recorded failed, and the chain goes on in a new worker with the next job;
#   - `gridrun status` while a chain runs (a stand-in trainer that holds each job until told):
#     the job that runs is running, the jobs after it are submitted (waiting for their turn), and
#     one that ended has its own outcome and exit code, not its task's;
#   - nothing is left: no gridrun-train process, no worker folder.
#   scenario_warm.sh BIN_DIR WORK_DIR PYTHON
source "$(dirname "$0")/lib.sh"
BIN=$1 WORK=$2 PY=$3
HERE=$(cd "$(dirname "$0")" && pwd)
require_cluster
require_train "$BIN/gridrun-train"
rm -rf "$WORK" && mkdir -p "$WORK"
# 1-rank jobs (mlp, lenet) and 2-rank jobs: three tasks of three in the warm run. The failing job
# (a missing data set) is the second of its task, so it runs in a warm worker.
cat >"$WORK/grid.yaml" <<'YAML'
name: slurm-warm
defaults:
  dataset: synthetic
  epochs: 1
  train_samples: 128
  test_samples: 32
  batch_per_rank: 32
  device: cpu
  threads_per_rank: 1
grid:
  model: [mlp, lenet]
  ranks: [1]
  seed: [1, 2]
include:
  - {model: mlp, ranks: 2, seed: 1}
  - {model: mlp, ranks: 2, seed: 2}
  - {model: lenet, ranks: 2, seed: 1}
YAML
# Four 1-rank jobs in grid order synthetic, mnist (missing: fails at start), synthetic, mnist: the
# first task of three runs the failing job second (warm) and a good one after it.
cat >"$WORK/grid-fail.yaml" <<'YAML'
name: slurm-warm-fail
defaults:
  dataset: synthetic
  model: mlp
  epochs: 1
  train_samples: 128
  test_samples: 32
  batch_per_rank: 32
  device: cpu
  ranks: 1
  threads_per_rank: 1
  data_dir: /nonexistent/mnist
grid:
  seed: [1, 2]
  dataset: [synthetic, mnist]
YAML

submit() {  # submit OUT FLAGS...
  local out=$1; shift
  "$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$out" --time 5 "$@" | tee -a "$WORK/submit.txt"
  wait_until 300 "run in $out to leave squeue" run_drained "$out/slurm-warm"
}

note "cold: one job per task"
submit "$WORK/cold"
note "warm: three jobs per task in one worker"
submit "$WORK/warm" --launch warm --jobs-per-task 3
lists=("$WORK/warm/slurm-warm"/slurm/s1-*.jobs)
grep -q '+' "${lists[0]}" || fail "warm list has no chains: $(cat "${lists[@]}")"

"$PY" - "$WORK/cold/slurm-warm" "$WORK/warm/slurm-warm" <<'PYEOF'
import glob, os, sys, h5py, numpy as np
cold, warm = sys.argv[1], sys.argv[2]
def losses(run):
    out = {}
    for f in sorted(glob.glob(os.path.join(run, "results", "*.h5"))):
        with h5py.File(f, "r") as h:
            status = h.attrs["status"]
            status = status.decode() if isinstance(status, bytes) else str(status)
            assert status == "completed", (f, status)
            out[os.path.basename(f)] = (h["steps/loss"][:], h["epochs/train_loss"][:],
                                        int(h["summary"]["launch_warm"][0]))
    return out
c, w = losses(cold), losses(warm)
assert len(c) == 7 and c.keys() == w.keys(), (sorted(c), sorted(w))
for k in c:
    assert np.array_equal(c[k][0], w[k][0]), f"{k}: step losses differ"
    assert np.array_equal(c[k][1], w[k][1]), f"{k}: epoch losses differ"
    assert c[k][2] == 0, f"{k}: cold run says warm"
n_warm = sum(v[2] for v in w.values())
# 7 jobs in tasks of 3: 4 one-rank (3 + 1) and 3 two-rank (3): 2 + 0 + 2 warm
assert n_warm == 4, f"{n_warm} of 7 jobs ran warm"
print(f"warm run: {n_warm} of 7 jobs warm; losses equal to the cold run's bit for bit")
PYEOF
for log in "$WORK/warm/slurm-warm"/logs/*.out; do
  [[ "$log" == */slurm-* ]] && continue
  grep -q "step" "$log" || fail "job log $log has no progress line of its own"
done

note "a job failing in the warm worker: launched again cold, then the chain goes on"
"$BIN/gridrun" submit "$WORK/grid-fail.yaml" --slurm --out "$WORK/fail" --time 5 --launch warm \
    --jobs-per-task 3 | tee -a "$WORK/submit.txt"
RUN="$WORK/fail/slurm-warm-fail"
wait_until 300 "failing run to leave squeue" run_drained "$RUN"
cat "$RUN"/logs/slurm-*.out
read -r -a chain < <(head -1 "$RUN"/slurm/s1-a0-*.jobs | tr '+' ' ')
[[ ${#chain[@]} -eq 3 ]] || fail "first task is not a chain of 3: ${chain[*]}"
grep -q '"mnist"' "$RUN/jobs/${chain[1]}.json" || fail "the second job of the chain is not the failing one"
log=$(cat "$RUN"/logs/slurm-*_0.out)
[[ "$log" == *"job ${chain[1]}: the warm worker exited with 2; again cold"* ]] ||
  fail "the failing job was not launched again cold"
[[ "$(cat "$RUN/slurm/ended/${chain[1]}")" == 2 ]] || fail "ended/${chain[1]} is not 2"
[[ "$(cat "$RUN/slurm/ended/${chain[2]}")" == 0 ]] || fail "the job after the failing one did not complete"
"$BIN/gridrun" status "$RUN" --format json >"$WORK/status.json"
"$PY" - "$WORK/status.json" <<'PYEOF'
import json, sys
st = json.load(open(sys.argv[1]))
assert st["counts"] == {"completed": 2, "failed": 2}, st["counts"]
PYEOF

note "gridrun status while a chain runs: its jobs one by one, not the task's state for all"
cat >"$WORK/grid-hold.yaml" <<'YAML'
name: slurm-warm-hold
defaults: {dataset: synthetic, model: mlp, device: cpu, ranks: 1, threads_per_rank: 1, epochs: 1}
grid:
  seed: [1, 2, 3]
YAML
"$BIN/gridrun" submit "$WORK/grid-hold.yaml" --slurm --out "$WORK/hold" --time 5 --jobs-per-task 3 \
    --train-bin "$HERE/fake-hold-train.sh" | tee -a "$WORK/submit.txt"
RUN="$WORK/hold/slurm-warm-hold"
HOLD="$RUN/hold"
read -r -a chain < <(head -1 "$RUN"/slurm/s1-a0-*.jobs | tr '+' ' ')
[[ ${#chain[@]} -eq 3 ]] || fail "the task is not a chain of 3: ${chain[*]}"
# Whatever happens below, the held jobs are let go at exit, so no stand-in keeps the cluster.
# shellcheck disable=SC2317  # run at exit (lib.sh AT_EXIT)
release_held() {
  local id
  for id in "${chain[@]}"; do [[ -s "$HOLD/$id.exit" ]] || echo 0 >"$HOLD/$id.exit"; done
}
AT_EXIT+=(release_held)
states() {  # the chain's jobs as `gridrun status` shows them: STATE[:EXIT] in chain order
  "$BIN/gridrun" status "$RUN" --format json | "$PY" -c '
import json, sys
jobs = {j["id"]: j for j in json.load(sys.stdin)["jobs"]}
def shown(j):
    return j["state"] + (":%s" % j["exit_code"] if j["state"] == "failed" else "")
print(" ".join(shown(jobs[i]) for i in sys.argv[1:]))' "${chain[@]}"
}
# The stand-in touches <id>.started after the body recorded the job's start, and waits.
wait_until 120 "the chain's first job to start" test -f "$HOLD/${chain[0]}.started"
got=$(states)
[[ "$got" == "running submitted submitted" ]] || fail "first job running: status says '$got'"
echo 3 >"$HOLD/${chain[0]}.exit"
wait_until 120 "the chain's second job to start" test -f "$HOLD/${chain[1]}.started"
got=$(states)
[[ "$got" == "failed:3 running submitted" ]] || fail "second job running: status says '$got'"
echo 0 >"$HOLD/${chain[1]}.exit"
echo 0 >"$HOLD/${chain[2]}.exit"
wait_until 120 "the held chain to leave squeue" run_drained "$RUN"
[[ "$(cat "$RUN/slurm/ended/${chain[2]}")" == 0 ]] || fail "the held chain's last job did not end with 0"

note "nothing left"
! pgrep -f "gridrun-train --job $WORK" >/dev/null || { pgrep -af gridrun-train; fail "gridrun-train left running"; }
for r in warm/slurm-warm fail/slurm-warm-fail; do
  left=$(find "$WORK/$r/workers" -mindepth 1 -maxdepth 1 2>/dev/null | head -3)
  [[ -z "$left" ]] || fail "worker folders left: $left"
done
note "PASS"
