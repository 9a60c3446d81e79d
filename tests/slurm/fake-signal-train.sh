#!/usr/bin/env bash
# Stand-in for gridrun-train in scenario_signal.sh (the `--signal` check). It does no work: it
# waits for the signal that slurmctld sends before the time limit, so the check depends on when
# slurmctld sends it, never on how fast anything runs. On USR1/TERM it records the signal and
# exits 75 (checkpointed, as gridrun-train does); a restart (--resume) records that and exits 0.
#   called as: fake-signal-train.sh --job RUN/jobs/<id>.json --out RUN/results [--resume]
set -uo pipefail
# shellcheck source=fake-train-args.sh
source "$(dirname "$0")/fake-train-args.sh"
dir="$out/../signalcheck"
mkdir -p "$dir"
if ((resume)); then
  echo "restart ${SLURM_RESTART_COUNT:-0}" >"$dir/$id.resumed"
  exit 0
fi
got=""
trap 'got=USR1' USR1
trap 'got=TERM' TERM
echo "$$" >"$dir/$id.started"
# The job's own time limit (3 minutes) ends this loop if no signal comes; the deadline only keeps a
# stray run outside Slurm from waiting for ever. `wait` on a background sleep returns as soon as a
# trapped signal arrives.
deadline=$((SECONDS + 300))
while [[ -z "$got" ]] && ((SECONDS < deadline)); do
  sleep 0.2 &
  wait $! 2>/dev/null
done
kill $! 2>/dev/null
[[ -n "$got" ]] || { echo "fake-signal-train: no signal within 300 s" >&2; exit 1; }
echo "$got" >"$dir/$id.signal"
exit 75
