#!/usr/bin/env bash
# Quick start, step 2: install what is missing (test tools included), build, and run the whole test
# suite with ctest. Usage: bash scripts/test.sh (as root, or a user with sudo). Exit code is ctest's.
# Ends with the counts: passed, failed, and skipped by reason (a test whose tool is missing skips
# with a reason, see tests/needs.sh; under CI=true that is a failure for what --test installs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
scripts/build.sh
cd build
junit="$PWD/ctest-junit.xml"
rm -f "$junit"
rc=0
ctest --output-on-failure --timeout 900 -j 2 --output-junit "$junit" || rc=$?
python3 ../scripts/ctest-summary.py "$junit" || echo "test.sh: no counts (could not read $junit)" >&2
exit "$rc"
