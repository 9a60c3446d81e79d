#!/usr/bin/env bash
# Golden job ids: the id of every job of every example grid (and the good test grids), as
# `gridrun plan --format csv` printed them before the typed-parameter redesign (issue 16).
# A job id names a job's results on disk, so the same parameters must keep the same id forever.
# Grids with model: torchscript are not here: their ids hash the model file's absolute path and
# content (docs/grid.md), which differ from checkout to checkout.
# When an example grid is changed on purpose, regenerate its file:
#   gridrun plan GRID --format csv | cut -d, -f2 | tail -n +2 > tests/jobs/golden/ids/NAME.ids
# The examples.<study>-plan tests (tests/examples/check_plan.py) read these files too, for the
# full-size examples, and pin the rest of each of their jobs there.
set -euo pipefail
gridrun=$1; root=$2
golden=$root/tests/jobs/golden/ids
fail=0; n=0
# plan checks a built-in data set's files (issue 58): it runs where empty stand-ins of the
# examples' data files are (their data_dir is relative to where gridrun runs).
cwd=$(mktemp -d)
trap 'rm -rf "$cwd"' EXIT
bash "$root/tests/jobs/data_stand_ins.sh" "$cwd"
for ids in "$golden"/*.ids; do
  name=$(basename "$ids" .ids)
  grid=$root/examples/$name.yaml
  [ -f "$grid" ] || grid=$root/tests/jobs/grids/$name.yaml
  if [ ! -f "$grid" ]; then echo "FAIL $name: no grid file for the golden $ids"; fail=1; continue; fi
  got=$(cd "$cwd" && "$gridrun" plan "$grid" --format csv 2>/dev/null | cut -d, -f2 | tail -n +2)
  if [ "$got" != "$(cat "$ids")" ]; then
    echo "FAIL $grid: job ids differ from $ids"
    diff <(cat "$ids") <(printf '%s\n' "$got") | head -10 || true
    fail=1
  fi
  n=$((n + $(wc -l < "$ids")))
done
[ $fail = 0 ] && echo "golden ids: $n jobs in $(find "$golden" -name '*.ids' | wc -l) grids, all equal"
exit $fail
