#!/usr/bin/env bash
# Scenario test of the quick start itself (issue 49, point 7): runs scripts/quickstart.sh unchanged,
# as a person would, and checks what it promises: one line per stage, in order, with its elapsed
# time; the two binaries it builds; the example grid run to the end with its report; the run in
# runs/quickstart/ with all four jobs done (read back by `gridrun ls --format json`).
#
# The script works from the folder above its own, so it runs from a scratch copy of scripts/ and
# examples/quickstart.yaml whose build/ is a link to this build tree: its build stage then checks
# the two targets (up to date after the suite's build; nothing is rebuilt under other tests) rather
# than compiling them afresh, which a fresh clone's 6 minutes would cost every CI run. Its install
# stage is the real scripts/install-deps.sh; the test is skipped (77) when a package is missing,
# so that a test never installs packages.
#   quickstart_script.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

missing=()
while read -r p; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done < <("$src/scripts/install-deps.sh" --list)
if ((${#missing[@]})); then
  echo "SKIP: the quick start would install ${missing[*]}"
  exit 77
fi

tmp=$(mktemp -d /tmp/gridrun-quickstart.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/examples"
cp -r "$src/scripts" "$tmp/scripts"
# The copy of the grid trains one epoch of 2,048 samples, not the example's 4 epochs of
# Fashion-MNIST (70 s of this test's 85): what is checked here is the script's stages and a run of
# the example's four jobs to the end, which does not depend on their length. The sed must change the
# line, so a grid whose epochs line moves fails here rather than silently running in full.
sed 's/^  epochs: 4$/  epochs: 1\n  train_samples: 2048\n  test_samples: 512/' \
  "$src/examples/quickstart.yaml" >"$tmp/examples/quickstart.yaml"
grep -q '^  train_samples: 2048$' "$tmp/examples/quickstart.yaml" ||
  fail "examples/quickstart.yaml has no '  epochs: 4' line for the test's shorter copy"
ln -s "$build" "$tmp/build"

set +e
bash "$tmp/scripts/quickstart.sh" >"$tmp/out.txt" 2>&1
rc=$?
set -e
cat "$tmp/out.txt"
((rc == 0)) || fail "scripts/quickstart.sh exited $rc"

# One line per stage, in order, each with its elapsed time, and the closing line's split.
stages=$(grep -E '^quickstart: \[[0-9]/3\] .* \(at [0-9]+ s\)$' "$tmp/out.txt" | cut -c13-17 | tr '\n' ' ')
[[ $stages == "[1/3] [2/3] [3/3] " ]] || fail "stage lines: '$stages', expected [1/3] [2/3] [3/3]"
grep -qE '^install-deps: all [0-9]+ packages present$' "$tmp/out.txt" ||
  fail "the install stage did not find every package present"
grep -qE '^quickstart: done in [0-9]+ s \(install [0-9]+ s, build [0-9]+ s, run [0-9]+ s\);' "$tmp/out.txt" ||
  fail "no closing line with the time of each stage"
# The stage lines come before the stage's own output: the build stage precedes gridrun's first line.
n_build=$(grep -n '^quickstart: \[2/3\]' "$tmp/out.txt" | cut -d: -f1)
n_run=$(grep -n '^quickstart: \[3/3\]' "$tmp/out.txt" | cut -d: -f1)
n_first=$(grep -n '^run quickstart' "$tmp/out.txt" | head -1 | cut -d: -f1)
[[ -n $n_first ]] || fail "gridrun run printed no 'run quickstart' line"
((n_build < n_run && n_run < n_first)) || fail "stage lines out of order (2/3 at $n_build, 3/3 at $n_run, run at $n_first)"

# The run is where the closing line says, complete, and its report reads.
[[ -d $tmp/runs/quickstart ]] || fail "no runs/quickstart/"
"$build/bin/gridrun" ls "$tmp/runs" --format json >"$tmp/ls.json"
python3 - "$tmp/ls.json" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))  # one object per run (docs/cli.md, gridrun ls)
assert len(rows) == 1, f"expected one run, got {rows}"
r = rows[0]
assert r["name"] == "quickstart", r
assert (r["jobs"], r["done"], r["failed"]) == (4, 4, 0), f"expected 4 jobs, all done: {r}"
print(f"ok: {r['path']}: {r['done']} of {r['jobs']} done")
EOF
"$build/bin/gridrun" report "$tmp/runs/quickstart" >"$tmp/report.txt"
grep -q 'lenet' "$tmp/report.txt" || fail "the report names no lenet job"
echo "ok: the quick start ran its three stages and the example grid"
