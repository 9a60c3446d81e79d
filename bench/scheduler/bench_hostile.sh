#!/usr/bin/env bash
# Hostile run files, third round (issue 57; BENCHMARKS.md, "Hostile input, third round"):
# every kind of run file replaced in turn by a FIFO, a /dev/zero link, a link to a file outside the
# run, a 1 GB sparse file, a folder and 20 copies with 1-8 flipped bits (seeded), each followed by status, ls,
# report, export (csv and tensorboard), simulate and run under a timeout and an address-space
# limit. Prints hangs, crashes, refusals, peak RSS, files outside the run changed and jobs lost
# per kind of file; exits 1 when any hang, crash, outside change or lost job was seen.
#
#   bash bench/scheduler/bench_hostile.sh [--build DIR] [--seed S] [--flips N] [--timeout S] [--as-mb MB]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SEED=57
FLIPS=20
TIMEOUT=20
AS_MB=2000
# shellcheck source=bench/scheduler/lib.sh
source "$HERE/lib.sh"
bench_flags bench_hostile 2,9 "$@" <<'FLAGS'
--seed SEED
--flips FLIPS
--timeout TIMEOUT
--as-mb AS_MB
FLAGS
bench_binaries bench_hostile "$BUILD"
/usr/bin/python3 "$HERE/bench_hostile.py" "$GRIDRUN" "$TRAIN" --seed "$SEED" --flips "$FLIPS" --timeout "$TIMEOUT" --as-mb "$AS_MB"
