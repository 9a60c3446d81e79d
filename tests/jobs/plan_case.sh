#!/usr/bin/env bash
# One scenario of `gridrun plan`: runs the real binary and checks its exit code and output.
#   plan_case.sh GRIDRUN EXPECTED_RC "ARGS" CHECK...
# CHECK is one of  out:REGEX  err:REGEX  !out:REGEX  !err:REGEX  (grep -E on stdout/stderr),
#   lines:N (stdout has N lines), maxwidth:N (no stdout line longer than N), json-jobs:N (stdout is
#   valid JSON with N jobs), json:N (stdout is a valid JSON list of N entries).
set -euo pipefail
gridrun=$1 expected=$2 args=$3
shift 3
# The json checks parse with python3: without it the case skips (or fails under CI=true).
for check in "$@"; do
  if [[ $check == json* ]]; then bash "$(dirname "$0")/../needs.sh" python3 || exit $?; break; fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# plan checks a built-in data set's files (issue 58), and the examples' data_dir (data/...) is
# relative to where gridrun runs: it runs in a folder with empty stand-ins of those files.
bash "$(dirname "$0")/data_stand_ins.sh" "$tmp/cwd"
set +e
# shellcheck disable=SC2086  # ARGS is split on purpose
(cd "$tmp/cwd" && "$gridrun" $args) >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
fail() {
  echo "FAIL: $*"
  echo "--- gridrun $args (exit $rc)"; echo "--- stdout:"; head -40 "$tmp/out"
  echo "--- stderr:"; cat "$tmp/err"
  exit 1
}
[[ $rc == "$expected" ]] || fail "exit code $rc, expected $expected"
py=/usr/bin/python3
for check in "$@"; do
  kind=${check%%:*} arg=${check#*:}
  case $kind in
    out) grep -Eq -- "$arg" "$tmp/out" || fail "stdout lacks /$arg/" ;;
    err) grep -Eq -- "$arg" "$tmp/err" || fail "stderr lacks /$arg/" ;;
    '!out') ! grep -Eq -- "$arg" "$tmp/out" || fail "stdout has /$arg/" ;;
    '!err') ! grep -Eq -- "$arg" "$tmp/err" || fail "stderr has /$arg/" ;;
    lines) n=$(wc -l <"$tmp/out"); [[ $n == "$arg" ]] || fail "stdout has $n lines, expected $arg" ;;
    maxwidth)
      w=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$tmp/out")
      ((w <= arg)) || fail "stdout line of $w columns, limit $arg" ;;
    json-jobs)
      n=$($py -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["jobs"]))' "$tmp/out") ||
        fail "stdout is not valid JSON"
      [[ $n == "$arg" ]] || fail "JSON has $n jobs, expected $arg" ;;
    json)
      n=$($py -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$tmp/out") ||
        fail "stdout is not valid JSON"
      [[ $n == "$arg" ]] || fail "JSON has $n entries, expected $arg" ;;
    *) echo "plan_case.sh: unknown check '$check'"; exit 1 ;;
  esac
done
echo "ok: gridrun $args -> exit $rc, ${#} checks"
