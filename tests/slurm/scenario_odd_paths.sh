#!/usr/bin/env bash
# Real Slurm, real gridrun-train (issue 45, finding 8): a run directory whose path holds '%' (Slurm
# substitutes %j, %A ... in #SBATCH --output), spaces, a quote, '$' and unicode is submitted to the
# test cluster; both jobs complete, their logs land in that directory under their own names (no
# '%' was substituted, nothing went to a look-alike path), `gridrun status` reads them, and the
# collect job builds results.h5 there. A run directory with a backslash (Slurm strips it from
# --output) is refused with exit 2 before anything is queued.
#   scenario_odd_paths.sh BIN_DIR WORK_DIR PYTHON
source "$(dirname "$0")/lib.sh"
BIN=$1 WORK=$2 PY=$3
require_cluster
require_train "$BIN/gridrun-train"
rm -rf "$WORK" && mkdir -p "$WORK"
cat >"$WORK/grid.yaml" <<'YAML'
name: odd
defaults:
  dataset: synthetic
  model: mlp
  epochs: 1
  train_samples: 128
  test_samples: 64
  batch_per_rank: 32
  device: cpu
  threads_per_rank: 1
grid:
  lr: [0.05, 0.1]
YAML
OUT="$WORK/100%j %A d'q \$HOME été"
RUN="$OUT/odd"

note "submit into: $OUT"
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$OUT" --time 5 | tee "$WORK/submit.txt"
grep -q "2 job(s) submitted" "$WORK/submit.txt" || fail "expected 2 jobs submitted"
wait_until 240 "both jobs and the collect job to leave squeue" run_drained "$RUN"

note "status"
"$BIN/gridrun" status "$RUN" --format json >"$WORK/status.json"
"$PY" - "$WORK/status.json" <<'PYEOF'
import json, sys
st = json.load(open(sys.argv[1]))
states = [j["state"] for j in st["jobs"]]
assert states == ["completed", "completed"], st["jobs"]
assert st["collect_state"] == "COMPLETED", st["collect_state"]
PYEOF

note "logs and results in the odd directory, under their own names"
for f in "$RUN"/jobs/*.json; do
  id=$(basename "$f" .json)
  [[ -f "$RUN/results/$id.h5" ]] || fail "no results/$id.h5 in $RUN"
  compgen -G "$RUN/logs/$id*.out" >/dev/null || fail "no log of $id in $RUN/logs: $(ls "$RUN/logs")"
done
[[ -f "$RUN/results.h5" ]] || fail "the collect job left no results.h5 in $RUN"
# Nothing was written to a path Slurm made by substituting '%j' or '%A' (a number instead).
strays=$(find "$WORK" -mindepth 1 -maxdepth 1 ! -name grid.yaml ! -name submit.txt ! -name status.json \
  ! -path "$OUT" -print)
[[ -z "$strays" ]] || fail "files outside the run directory: $strays"

note "a backslash in the run directory is refused before anything is queued"
set +e
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$WORK/back\\slash" --time 5 >"$WORK/bs.txt" 2>&1
rc=$?
set -e
[[ $rc -eq 2 ]] || { cat "$WORK/bs.txt"; fail "expected exit 2 for a backslash, got $rc"; }
grep -q "backslash" "$WORK/bs.txt" || { cat "$WORK/bs.txt"; fail "the message does not name the backslash"; }
[[ ! -e "$WORK/back\\slash/odd/slurm/submitted.tsv" ]] || fail "something was submitted for the backslash path"
echo "ok"
