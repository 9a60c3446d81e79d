#!/usr/bin/env bash
# How far the verdict of a compare-by run can be trusted on a machine that is not quiet
# (BENCHMARKS.md, "A verdict you can trust"; issue 44). For each of three compare grids: one quiet
# reference run (5 interleaved repeats), then TRIALS trials in each of two orders (compare.order
# alternate = interleaved, blocked = every repeat of a phase together, phase after phase), half of
# the trials with background CPU load started at a seeded random moment (a busy loop at a random
# duty cycle, for a random share of the run). Per trial it reads the verdict's headline (`gridrun
# report --format json`): the winner, the ratio, conclusive or "inconclusive".
# Before the trials, --calibration-trials (default 4) calibrations per grid beside a busy loop at a
# random duty cycle (issue 58): how many were flagged (refused, or kept with --accept-load and
# warned beside the prediction) and how many predictions were confident and wrong (goal 0).
# Prints: confident verdicts that contradict the quiet reference (goal 0), the share called
# inconclusive, and the spread of the measured ratio (standard deviation of its log over the
# trials) interleaved against blocked (goal: at least 40 % lower). A benchmark, not a test: nothing
# here asserts; the table is the result.
#
#   bash bench/scheduler/bench_verdict.sh [--build DIR] [--trials N] [--repeats N] [--seed S]
#                                         [--only NAME] [--calibration-trials N] [--keep]
# --trials per grid and order (default 10; half loaded), --repeats per trial (default 3), --seed of
# the load's moments (default 1), --only one grid (ranks-mlp, zip-lenet, ranks-lenet), --keep the
# work folder.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TRIALS=10
REPEATS=3
SEED=1
ONLY=""
CAL_TRIALS=4
KEEP=0
# shellcheck source=bench/scheduler/lib.sh
source "$HERE/lib.sh"
bench_flags bench_verdict.sh 2,21 "$@" <<'FLAGS'
--trials TRIALS
--repeats REPEATS
--seed SEED
--only ONLY
--calibration-trials CAL_TRIALS
--keep KEEP=1
FLAGS
bench_binaries bench_verdict.sh "$BUILD"
bench_work verdict
cleanup() {
  bench_drop_work bench_verdict.sh "$KEEP"
}
trap cleanup EXIT
python3 "$HERE/verdict/bench_verdict.py" --gridrun "$GRIDRUN" --train "$TRAIN" --work "$WORK" \
  --trials "$TRIALS" --repeats "$REPEATS" --seed "$SEED" --only "$ONLY" \
  --calibration-trials "$CAL_TRIALS"
