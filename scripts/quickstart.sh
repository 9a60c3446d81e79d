#!/usr/bin/env bash
# Quick start, step 1: install what is missing, build, and run examples/quickstart.yaml on this
# machine, printing its report. Usage: bash scripts/quickstart.sh (as root, or a user with sudo)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export PATH="$PWD/build/bin:$PATH"
gridrun run examples/quickstart.yaml --out runs
