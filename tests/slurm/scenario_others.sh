#!/usr/bin/env bash
# Real Slurm, real gridrun-train: a phase that shares its node with a Slurm job of no job of the run
# is flagged by the verdict (issue 44 point 2, the Slurm conditions).
#  A compare-by grid of two phases (lr=0.05, then lr=0.1; one 1-rank job each) is submitted held
#  (--sbatch-arg=--hold). A foreign job (a sleep, not gridrun's) runs on the node while the first
#  phase's array is released and runs; it is cancelled before the second phase's array is released.
#  Each task records the other jobs on its node at its start and end (logs/<id>.others): the first
#  phase's job lists the foreign job both times, the second's lists none; the report's verdict names
#  the first phase as sharing its node with that job (inconclusive, with the rerun command), and
#  does not name the second. Every step waits on Slurm's own state (squeue), never on time.
#   scenario_others.sh BIN_DIR WORK_DIR PYTHON
source "$(dirname "$0")/lib.sh"
BIN=$1 WORK=$2 PY=$3
require_cluster
require_train "$BIN/gridrun-train"
rm -rf "$WORK" && mkdir -p "$WORK"
cat >"$WORK/grid.yaml" <<'YAML'
name: slurm-others
compare: {by: lr}
defaults: {dataset: synthetic, model: mlp, device: cpu, ranks: 1, threads_per_rank: 1, epochs: 1,
           train_samples: 256, test_samples: 64, batch_per_rank: 32, optimizer: sgd}
grid:
  lr: [0.05, 0.1]
YAML
RUN="$WORK/runs/slurm-others"
FOREIGN=""
# shellcheck disable=SC2317  # run at exit (lib.sh AT_EXIT)
cleanup() { if [[ -n $FOREIGN ]]; then scancel "$FOREIGN" 2>/dev/null || true; fi; }
AT_EXIT+=(cleanup)
listed() { [[ -n "$(squeue -h -j "$1" -o %i 2>/dev/null)" ]]; }
gone() { ! listed "$1"; }
running() { [[ "$(squeue -h -j "$1" -o %T 2>/dev/null)" == RUNNING ]]; }

note "a foreign job takes one core of the node"
FOREIGN=$(sbatch --parsable -J foreign-sleeper -c 1 -o /dev/null --wrap 'exec sleep 600')
wait_until 120 "the foreign job $FOREIGN to run" running "$FOREIGN"

note "submit the run held"
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$WORK/runs" --time 5 --sbatch-arg=--hold |
  tee "$WORK/submit.txt"
grep -q "2 job(s) submitted" "$WORK/submit.txt" || fail "expected 2 jobs submitted"
# The arrays with their phase and job (one job each), in phase order.
mapfile -t ARRAYS < <("$PY" - "$RUN" <<'PYEOF'
import json, sys
run = sys.argv[1]
rows = []
for line in open(f"{run}/slurm/submitted.tsv"):
    f = line.rstrip("\n").split("\t")
    if line.startswith("#") or f[1] != "array":
        continue
    (job,) = open(f"{run}/slurm/{f[2]}.jobs").read().split()
    phase = json.load(open(f"{run}/jobs/{job}.json"))["meta"]["phase"]
    rows.append((phase, f[3], job))
for phase, slurm_id, job in sorted(rows, key=lambda r: float(r[0])):
    print(phase, slurm_id, job)
PYEOF
)
[[ ${#ARRAYS[@]} -eq 2 ]] || fail "expected 2 arrays, got: ${ARRAYS[*]}"
read -r P1 A1 J1 <<<"${ARRAYS[0]}"
read -r P2 A2 J2 <<<"${ARRAYS[1]}"
note "phase lr=$P1: array $A1 (job $J1); phase lr=$P2: array $A2 (job $J2)"

note "phase lr=$P1 runs beside the foreign job"
scontrol release "$A1"
wait_until 240 "phase lr=$P1 (array $A1) to end" gone "$A1"
running "$FOREIGN" || fail "the foreign job $FOREIGN ended before phase lr=$P1 did"
scancel "$FOREIGN"
wait_until 120 "the foreign job $FOREIGN to leave squeue" gone "$FOREIGN"
FOREIGN_ID=$FOREIGN
FOREIGN=""

note "phase lr=$P2 runs alone"
scontrol release "$A2"
wait_until 240 "the run to drain" run_drained "$RUN"
for f in "$RUN/logs/$J1.others" "$RUN/logs/$J2.others"; do
  [[ -f $f ]] || fail "no $f"
  echo "==> $f"
  cat "$f"
done
[[ $(grep -c "^job $FOREIGN_ID root foreign-sleeper$" "$RUN/logs/$J1.others") -eq 2 ]] ||
  fail "phase lr=$P1's task did not list the foreign job at its start and end"
if ! grep -q '^start ' "$RUN/logs/$J2.others" || ! grep -q '^end ' "$RUN/logs/$J2.others"; then
  fail "phase lr=$P2's task did not record its listings"
fi
if grep -q '^job \|^unknown' "$RUN/logs/$J2.others"; then fail "phase lr=$P2's task listed other jobs"; fi

note "the verdict"
"$BIN/gridrun" report "$RUN" | sed -n '1,/^$/p'
"$BIN/gridrun" report "$RUN" --format json >"$WORK/report.json"
"$PY" - "$WORK/report.json" "$P1" "$P2" "$FOREIGN_ID" <<'PYEOF'
import json, sys
tables = json.load(open(sys.argv[1]))["tables"]
p1, p2, foreign = f"lr={sys.argv[2]}", f"lr={sys.argv[3]}", sys.argv[4]
verdict = [r["verdict"] for t in tables if t["title"] == "Verdict" for r in t["rows"]]
assert verdict and "inconclusive" in verdict[0] and f"{p1} was disturbed" in verdict[0], verdict
assert any(v.startswith(f"{p1} shared its nodes with 1 other Slurm job while it ran ({foreign} root "
                        "foreign-sleeper): not comparable.") and f"--rerun phase={sys.argv[2]}" in v
           for v in verdict), verdict
assert not any(v.startswith(f"{p2} shared its nodes") for v in verdict), verdict
print("verdict:", verdict[0])
PYEOF
echo "PASS"
