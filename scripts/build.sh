#!/usr/bin/env bash
# Configures and builds gridrun into ./build (Release). Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
fi
cmake --build build -j "$(nproc)"
