#!/usr/bin/env bash
# 500 bit-flipped copies over every kind of run file (issue 45; BENCHMARKS.md, "Hostile input"):
# tests/scheduler/e2e_bitflip.py with more copies and its own seed. Each copy is followed by
# status, collect, report, export, simulate and run; the script fails on a crash, a hang, a lost
# job or an exported figure changed without a command naming the damaged file, and prints the
# counts (copies, copies whose damage a command named, jobs redone) per kind of file.
#
#   bash bench/scheduler/bench_bitflip.sh [--build DIR] [--copies N] [--seed S]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
COPIES=500
SEED=53
# shellcheck source=bench/scheduler/lib.sh
source "$HERE/lib.sh"
bench_flags bench_bitflip 2,8 "$@" <<'FLAGS'
--copies COPIES
--seed SEED
FLAGS
start=$(date +%s)
/usr/bin/python3 "$HERE/../../tests/scheduler/e2e_bitflip.py" "$BUILD/bin/gridrun" "$BUILD/bin/gridrun-train" \
  --copies "$COPIES" --seed "$SEED"
echo "bench_bitflip: $COPIES copies in $(($(date +%s) - start)) s on $(nproc) cores"
