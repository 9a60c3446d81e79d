#!/usr/bin/env bash
# Configures and builds gridrun into ./build (Release).
# Usage: scripts/build.sh [--target NAME]... [CMAKE_CONFIGURE_ARGS...]
#   --target NAME   build only NAME (repeatable; e.g. gridrun, gridrun-train: what the quick start
#                   runs); default: every target, tests and benchmarks included (what test.sh needs)
# Other arguments go to cmake's configure step (first configure only).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
configure=()
while (($#)); do
  case $1 in
    --target) targets+=(--target "$2"); shift 2 ;;
    -h|--help) sed -n 2,6p "$0"; exit 0 ;;
    *) configure+=("$1"); shift ;;
  esac
done
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "${configure[@]}"
fi
cmake --build build -j "$(nproc)" "${targets[@]}"
