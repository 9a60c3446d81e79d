#!/usr/bin/env bash
# Issue 56's prediction benchmark: examples/own-script/compare-cpu.yaml (a user's own DDP script as
# command jobs: 1 and 2 ranks, two seeds) calibrated with `gridrun calibrate`, then run with
# `gridrun run`, TRIALS times, each trial in a fresh folder. Figure per trial and phase: the
# prediction's error against the measured makespan, (predicted - measured) / measured, from
# `gridrun report --format json` (the phase table's predicted_s and makespan_s), with the phase's
# other% (CPU that went to other processes: a loaded trial says so). Prints every trial and the
# median absolute error per phase (goal: within 15 %), and how often the predicted winner was the
# measured one. LAUNCHES: `calibrate --launches` (each configuration's figures the median of that
# many launches alone).
# Usage: bench/exec/bench_own_predict.sh [BUILD_DIR] [TRIALS] [LAUNCHES]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=$(realpath "${1:-build}")
trials=${2:-5}
launches=${3:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The example names Debian's python3 (python3-torch) by its path; PATH only for what it starts.
export PATH=/usr/bin:$PATH
for ((i = 1; i <= trials; i++)); do
  rm -rf "$work/t" && mkdir -p "$work/t"
  cp -r "$root/examples/own-script" "$work/t/own-script"
  "$build/bin/gridrun" calibrate "$work/t/own-script/compare-cpu.yaml" --out "$work/t/runs" --accept-load \
    --launches "$launches" >"$work/t/cal.log" 2>&1
  "$build/bin/gridrun" run "$work/t/own-script/compare-cpu.yaml" --out "$work/t/runs" --no-report >"$work/t/run.log" 2>&1
  "$build/bin/gridrun" report "$work/t/runs/own-script-cpu" --format json >"$work/report-$i.json"
done
/usr/bin/python3 - "$work" "$trials" <<'PY'
import json, statistics, sys
work, trials = sys.argv[1], int(sys.argv[2])
errs, right = {}, 0
for i in range(1, trials + 1):
    rep = json.load(open(f"{work}/report-{i}.json"))
    rows = [r for t in rep["tables"] if t["title"].startswith("Phases (") for r in t["rows"]]
    line = []
    for r in rows:
        e = (r["predicted_s"] - r["makespan_s"]) / r["makespan_s"]
        errs.setdefault(r["phase"], []).append(abs(e))
        line.append("%s measured %.2f s predicted %.2f s (%+.1f %%, other %.0f %%)" % (
            r["phase"], r["makespan_s"], r["predicted_s"], 100 * e, r.get("other%") or 0))
    measured_first = min(rows, key=lambda r: r["makespan_s"])["phase"]
    predicted_first = min(rows, key=lambda r: r["predicted_s"])["phase"]
    right += measured_first == predicted_first
    print(f"trial {i}: " + "; ".join(line))
for phase, e in errs.items():
    print("%s: median |error| %.1f %% over %d trials" % (phase, 100 * statistics.median(e), len(e)))
print(f"predicted winner = measured winner in {right} of {trials} trials")
PY
