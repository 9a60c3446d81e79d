#!/usr/bin/env bash
# Real Slurm: `--signal` reaches the batch script. A job with a 3-minute limit and
# --signal=B:USR1@90 whose trainer (fake-signal-train.sh) only waits for a signal; slurmctld's
# warning must arrive through the batch shell's forwarding, and the task is requeued and restarted
# with --resume. The stand-in waits for the signal however late it comes; it must only be running
# (its trap set) before the signal can come: Slurm may send it up to 60 s early, so with a 1-minute
# limit it could come at the task's first second, before mpirun had started the stand-in (seen
# once: the stand-in died of the USR1, exit 138). With 3 minutes and @90 it comes 30-120 s in.
# Mostly a wait for slurmctld, with no training: its own test, which does not hold the CPU lock
# (tests/slurm/CMakeLists.txt), so that the training tests use the cores meanwhile.
#   scenario_signal.sh BIN_DIR WORK_DIR PYTHON
source "$(dirname "$0")/lib.sh"
BIN=$1 WORK=$2
HERE=$(cd "$(dirname "$0")" && pwd)
require_cluster
rm -rf "$WORK" && mkdir -p "$WORK"

# The stand-in ignores everything but signals; one job, a 3-minute limit, the warning due 90 s
# after the start (Slurm sends it up to 60 s early and checks every 30 s: 30-120 s in).
cat >"$WORK/signal.yaml" <<'YAML'
name: slurm-signal
defaults: {dataset: synthetic, model: mlp, device: cpu, ranks: 1, threads_per_rank: 1,
           time_limit: "3"}
grid:
  seed: [0]
YAML
SRUN="$WORK/runs/slurm-signal"
"$BIN/gridrun" submit "$WORK/signal.yaml" --slurm --out "$WORK/runs" --signal B:USR1@90 \
  --train-bin "$HERE/fake-signal-train.sh"
sid=$(basename "$SRUN"/jobs/*.json .json)
grep -qx -- "#SBATCH --signal=B:USR1@90" "$SRUN"/slurm/s1-a0-*.sbatch ||
  fail "no '#SBATCH --signal=B:USR1@90' in the script of the --signal check"

# From the submission: the warning 30-120 s in, the requeue, the restart and the collect job.
wait_until 300 "the --signal check job to finish" run_drained "$SRUN"

note "slurmctld's --signal warning reached the stand-in through the batch shell"
cat "$SRUN"/logs/slurm-*.out
[[ "$(cat "$SRUN/signalcheck/$sid.signal" 2>/dev/null)" == USR1 ]] ||
  fail "the stand-in trainer never got USR1 (--signal=B:USR1@90 did not reach the batch script)"
grep -q "got SIGUSR1, forwarding to 1 runner" "$SRUN"/logs/slurm-*.out ||
  fail "the batch shell of the --signal check did not log the forwarded USR1"
grep -q "requeueing" "$SRUN"/logs/slurm-*.out || fail "the --signal check job was not requeued"
[[ -f "$SRUN/signalcheck/$sid.resumed" ]] || fail "the --signal check job did not restart with --resume"
echo "PASS"
