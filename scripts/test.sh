#!/usr/bin/env bash
# Quick start, step 2: install what is missing (test tools included), build, and run the whole test
# suite with ctest. Usage: bash scripts/test.sh (as root, or a user with sudo). Exit code is ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
scripts/build.sh
cd build
ctest --output-on-failure --timeout 900 -j 2
