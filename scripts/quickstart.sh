#!/usr/bin/env bash
# Quick start, step 1: install what is missing, build the two programs it runs (gridrun and
# gridrun-train; tests and benchmarks are scripts/test.sh's), and run examples/quickstart.yaml on
# this machine, printing its report. One line per stage with its elapsed time.
# Usage: bash scripts/quickstart.sh (as root, or a user with sudo)
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
stage() {  # stage N NAME: the line a person sees before a stage's own output
  echo "quickstart: [$1/3] $2 (at $(($(date +%s) - t0)) s)"
}
stage 1 "installing what is missing (scripts/install-deps.sh)"
scripts/install-deps.sh
t1=$(date +%s)
stage 2 "building gridrun and gridrun-train into build/ (scripts/build.sh)"
scripts/build.sh --target gridrun --target gridrun-train
t2=$(date +%s)
stage 3 "running examples/quickstart.yaml (gridrun run ... --out runs)"
export PATH="$PWD/build/bin:$PATH"
gridrun run examples/quickstart.yaml --out runs
t3=$(date +%s)
echo "quickstart: done in $((t3 - t0)) s (install $((t1 - t0)) s, build $((t2 - t1)) s, run $((t3 - t2)) s);" \
  "the run is in runs/quickstart/, its report: gridrun report runs/quickstart"
