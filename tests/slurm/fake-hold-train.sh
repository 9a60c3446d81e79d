#!/usr/bin/env bash
# Stand-in for gridrun-train in scenario_warm.sh's check of `gridrun status` while a chain runs
# (--jobs-per-task): job <id> records that it started (RUN/hold/<id>.started) and then waits until
# the scenario writes the code it is to exit with (RUN/hold/<id>.exit), so the scenario looks at
# the chain while it is certainly in a given state, never at a moment chosen by a clock. The
# deadline only bounds a broken run.
#   called as: fake-hold-train.sh --job RUN/jobs/<id>.json --out RUN/results [...]
set -uo pipefail
# shellcheck source=fake-train-args.sh
source "$(dirname "$0")/fake-train-args.sh"
dir="$out/../hold"
mkdir -p "$dir"
touch "$dir/$id.started"
deadline=$((SECONDS + 240))
until [[ -s "$dir/$id.exit" ]]; do
  ((SECONDS < deadline)) || { echo "fake-hold-train: no $dir/$id.exit within 240 s" >&2; exit 1; }
  sleep 0.2
done
exit "$(cat "$dir/$id.exit")"
