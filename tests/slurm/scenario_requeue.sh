#!/usr/bin/env bash
# Real Slurm, real gridrun-train: requeue and resume. Once the job's first checkpoint exists, the
# test sends USR1 to the batch shell itself (`scancel --signal=USR1 --batch`, what
# `--signal=B:USR1@T` makes slurmctld do before the time limit); the shell forwards it, the runner
# checkpoints and exits 75, the script requeues the task, the restart runs with --resume from that
# checkpoint and completes. Its final losses equal those of the same job run uninterrupted
# (directly, outside Slurm). The time limit is far away, so slurmctld itself never signals this
# job. The grid is a compare-by grid (one phase): a requeued job splits its phase into two
# sittings, so the report's phase table says "not measured" instead of a makespan.
# slurmctld's own --signal warning reaching the batch script is scenario_signal.sh (a test of its
# own: it waits for slurmctld, not for the CPU).
#   scenario_requeue.sh BIN_DIR WORK_DIR PYTHON
source "$(dirname "$0")/lib.sh"
BIN=$1 WORK=$2 PY=$3
require_cluster
require_train "$BIN/gridrun-train"
rm -rf "$WORK" && mkdir -p "$WORK"

# A: 24 epochs of 256 steps. The signal goes out right after the first epoch's checkpoint, so the
# job would have to run 23 epochs in the moment between that poll and the signal to escape it.
cat >"$WORK/grid.yaml" <<'YAML'
name: slurm-requeue
compare: {by: lr}
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
  time_limit: "30"
  seed: 3
grid:
  lr: [0.05]
YAML
RUN="$WORK/runs/slurm-requeue"
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$WORK/runs" --signal B:USR1@60
id=$(basename "$RUN"/jobs/*.json .json)
script=$(ls "$RUN"/slurm/s1-a0-*.sbatch)
grep -qx -- "#SBATCH --signal=B:USR1@60" "$script" || fail "no '#SBATCH --signal=B:USR1@60' in $script"
grep -qx -- "#SBATCH --time=0:30:00" "$script" || fail "no '#SBATCH --time=0:30:00' in $script"

note "uninterrupted reference run of job $id (outside Slurm, in the background)"
mkdir -p "$WORK/ref/results"
"$BIN/gridrun-train" --job "$RUN/jobs/$id.json" --out "$WORK/ref/results" --quiet \
  >"$WORK/ref.out" 2>&1 &
ref_pid=$!

# The newest finished checkpoint's step ("" if none): ckpt-<step>/ is renamed from ckpt-<step>.tmp/
# once complete, so a folder without the suffix is a whole checkpoint.
first_checkpoint() {
  local d
  for d in "$RUN/checkpoints/$id"/ckpt-*; do
    [[ "$d" =~ /ckpt-([0-9]+)$ && -f "$d/state.pt" ]] && { echo "${BASH_REMATCH[1]}"; return 0; }
  done
  return 1
}
have_checkpoint() { first_checkpoint >/dev/null; }
arr=$(awk '!/^#/ && $1 == 1 && $2 == "array" {print $4}' "$RUN/slurm/submitted.tsv")
[[ -n "$arr" ]] || fail "no sbatch id recorded in $RUN/slurm/submitted.tsv"
WAIT_POLL_S=0.1 wait_until 300 "the first checkpoint of job $id" have_checkpoint
first_step=$(first_checkpoint)
note "first checkpoint at step $first_step: USR1 to the batch shell of ${arr}_0"
scancel --signal=USR1 --batch "${arr}_0" ||
  fail "could not signal ${arr}_0 (did the job end before its first checkpoint was seen?)"

wait_until 480 "the requeued job and collect to finish" run_drained "$RUN"
wait "$ref_pid" || { cat "$WORK/ref.out" >&2; fail "reference run failed"; }

note "A: requeued on the test's signal, resumed from the checkpoint it wrote, completed"
"$BIN/gridrun" status "$RUN" --format json | tee "$WORK/status.json"
cat "$RUN"/logs/slurm-*.out
grep -q "got SIGUSR1, forwarding to 1 runner" "$RUN"/logs/slurm-*.out ||
  fail "the batch shell did not forward USR1"
grep -q -- "--resume" "$RUN"/logs/slurm-*.out || fail "restart did not pass --resume"
sig_step=$(sed -n 's/.*interrupted by signal; checkpoint at step \([0-9]*\) .*/\1/p' "$RUN/logs/$id.out" | head -1)
[[ -n "$sig_step" ]] || { cat "$RUN/logs/$id.out" >&2; fail "the runner did not report a checkpoint on the signal"; }
"$PY" - "$WORK/status.json" "$RUN/results/$id.h5" "$WORK/ref/results/$id.h5" "$first_step" "$sig_step" <<'PYEOF'
import json, sys, h5py, numpy as np
st = json.load(open(sys.argv[1]))
first_step, sig_step = int(sys.argv[4]), int(sys.argv[5])
(job,) = st["jobs"]
assert job["state"] == "completed", job
assert job["restarts"] == 1, f"expected exactly the one requeue the test caused: {job}"
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
assert sig_step >= first_step, (sig_step, first_step)
# resumed_from_step is the first step the restarted process ran: one past the signal's checkpoint.
assert a["resumed"] == sig_step + 1, f"resumed at {a['resumed']}, the signal's checkpoint is step {sig_step}"
assert b["resumed"] == 0
assert a["epoch"][-1] == b["epoch"][-1], (a["epoch"][-1], b["epoch"][-1])
for k in ("train_loss", "test_loss", "test_acc"):
    assert abs(a[k][-1] - b[k][-1]) <= 1e-6 * max(1.0, abs(b[k][-1])), (k, a[k][-1], b[k][-1])
print(f"first checkpoint at step {first_step}, signal checkpoint at step {sig_step}, requeued once, "
      f"resumed at step {a['resumed']}; final test_loss {a['test_loss'][-1]:.6f} == {b['test_loss'][-1]:.6f}")
PYEOF

note "A: the requeue split the job's phase: two sittings, no makespan"
"$BIN/gridrun" report "$RUN" --format json >"$WORK/report.json"
"$PY" - "$WORK/report.json" <<'PYEOF'
import json, sys
tables = json.load(open(sys.argv[1]))["tables"]
(phases,) = [t for t in tables if t["title"].startswith("Phases (")]
(row,) = phases["rows"]
assert row["phase"] == "lr=0.05" and row["ran"] == "not measured" and row["makespan_s"] is None, row
assert any("2 sittings" in n for n in phases["notes"]), phases["notes"]
print("phase lr=0.05: not measured (2 sittings: the requeue)")
PYEOF

echo "PASS"
