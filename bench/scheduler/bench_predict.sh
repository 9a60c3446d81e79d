#!/usr/bin/env bash
# Calibrated prediction vs measurement on a panel of compare-by grids (BENCHMARKS.md, "Predicting a
# grid before running it"). For each grid of predict/grids.sh: `gridrun calibrate`, `gridrun
# simulate --format json` (the prediction), `gridrun run` (the measurement, state.json), and the
# per-phase makespan error, the predicted and measured winner, and the calibration's cost as a
# share of the run (per grid, with the run's seconds and the calibration's launches; the summary
# gives the largest share over the grids that run a minute or more, issue 44's goal: <= 25 %).
# A benchmark, not a test: nothing here asserts; the table is the result.
#
# With --slurm, also the Slurm panel on the 3-host test cluster (started here unless SLURM_CONF
# names a running one): `gridrun calibrate --slurm --cluster`, `simulate --cluster`, `submit`,
# and the measured phases from `gridrun report` (the job files).
#
#   bash bench/scheduler/bench_predict.sh [--build DIR] [--out DIR] [--repeats N] [--only NAME]
#                                         [--launch cold|warm|cold,warm] [--slurm | --slurm-only]
#                                         [--no-yield] [--keep]
# --launch: the local panel's calibrate, simulate and run with `--launch MODE`, each mode in turn
# per grid (cold,warm: both in one sitting; the rows and the summary per mode, then the
# calibrations' cold/warm ratio; docs/scheduler.md, "Warm launches");
# --keep leaves the grids, calibrations and run directories in the printed work folder;
# --slurm-only skips the local panel; --no-yield runs the Slurm panel without Open MPI's
# yield-when-idle (see below).
#
# The Slurm panel runs with OMPI_MCA_mpi_yield_when_idle=1 (sbatch passes the environment on): the
# test cluster's three hosts share this machine's cores, 6 Slurm CPUs on 2, an oversubscription
# Open MPI cannot see from inside one host. There, ranks that busy-poll while they wait take the
# core from a rank of another host that has work, and a pair of 2-host jobs side by side flips
# between two speeds from run to run (cluster-lenet: 4.0 or 7.0 s). mpirun sets the same parameter
# itself on a node it knows is oversubscribed (gridrun run's --oversubscribe case); a real
# cluster's hosts do not share cores.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=""
REPEATS=1
ONLY=""
LAUNCHES=cold
SLURM=0
KEEP=0
LOCAL=1
YIELD=1
# shellcheck source=bench/scheduler/lib.sh
source "$HERE/lib.sh"
bench_flags bench_predict.sh 2,24 "$@" <<'FLAGS'
--out OUT
--repeats REPEATS
--only ONLY
--launch LAUNCHES
--slurm SLURM=1
--keep KEEP=1
--slurm-only SLURM=1 LOCAL=0
--no-yield YIELD=0
FLAGS
bench_binaries bench_predict.sh "$BUILD"
bench_work predict
STARTED_CLUSTER=""
cleanup() {
  if [[ -n $STARTED_CLUSTER ]]; then bash "$HERE/../../tests/slurm/local-cluster.sh" stop "$STARTED_CLUSTER" >/dev/null || true; fi
  bench_drop_work bench_predict.sh "$KEEP"
}
trap cleanup EXIT
OUT=${OUT:-$WORK/out}
mkdir -p "$OUT"
# shellcheck source=predict/grids.sh
source "$HERE/predict/grids.sh"
ROWS=$OUT/rows.jsonl
: >"$ROWS"
# NAME|FLAGS|BODY -> name, flags, body; false when --only names another grid.
split_entry() {
  name=${1%%|*}
  local rest=${1#*|}
  flags=${rest%%|*}
  body=${rest#*|}
  [[ -z $ONLY || $ONLY == "$name" ]]
}
for rep in $(seq 1 $((LOCAL ? REPEATS : 0))); do
  for entry in "${PANEL[@]}"; do
    split_entry "$entry" || continue
    grid=$WORK/$name.yaml
    printf 'name: %s\n%s\n' "$name" "$body" >"$grid"
    for launch in ${LAUNCHES//,/ }; do
      runs=$WORK/runs-$rep-$launch
      rm -rf "${runs:?}/$name"
      echo "== $name (repeat $rep, $launch launches) $flags" >&2
      # shellcheck disable=SC2086  # flags are words
      "$GRIDRUN" calibrate "$grid" --out "$runs" --train-bin "$TRAIN" --launch "$launch" $flags >"$WORK/cal.txt"
      # shellcheck disable=SC2086
      "$GRIDRUN" simulate "$grid" --out "$runs" --train-bin "$TRAIN" --format json --launch "$launch" $flags >"$WORK/pred.json"
      start=$(date +%s.%N)
      # shellcheck disable=SC2086
      "$GRIDRUN" run "$grid" --out "$runs" --train-bin "$TRAIN" --no-report --launch "$launch" $flags >/dev/null
      end=$(date +%s.%N)
      label=$name
      [[ $LAUNCHES == cold ]] || label="$name ($launch)"
      /usr/bin/python3 - "$WORK/pred.json" "$runs/$name" "$label" "$rep" "$start" "$end" "$WORK/cal.txt" >>"$ROWS" <<'PY'
import json, re, sys
pred_file, run_dir, name, rep, start, end, cal_txt = sys.argv[1:]
pred = json.load(open(pred_file))
state = json.load(open(run_dir + "/state.json"))
# "calibration took 5s (3 launch(es)), ...": gridrun-train processes the calibration started.
m = re.search(r"\((\d+) launch", open(cal_txt).read())
launches = int(m.group(1)) if m else None
cal = json.load(open(run_dir + "/calibration.json"))
meas = {k: v["makespan_s"] for k, v in state["phases"].items()}
print(json.dumps({"grid": name, "repeat": int(rep), "key": pred["compare_by"],
                  "predicted": {k: v["makespan_s"] for k, v in pred["phases"].items()},
                  "arrangement": {k: v["arrangement"] for k, v in pred["phases"].items()},
                  "measured": meas, "calibration_s": cal["cost_s"],
                  "run_s": float(end) - float(start), "launches": launches}))
PY
    done
  done
done
if [[ $SLURM -eq 1 ]]; then
  if [[ -z ${SLURM_CONF:-} ]]; then
    STARTED_CLUSTER=$WORK/cluster
    chmod 0711 "$WORK"  # the test cluster's munged (user munge) must get through to its folder
    bash "$HERE/../../tests/slurm/local-cluster.sh" start --nodes 3 "$STARTED_CLUSTER" >&2
    export SLURM_CONF=$STARTED_CLUSTER/slurm.conf
  fi
  if ((YIELD)); then export OMPI_MCA_mpi_yield_when_idle=1; fi
  CLUSTER=$WORK/cluster.yaml
  # The cluster's nodes as sinfo reports them, for calibrate and simulate.
  { echo "nodes:"; sinfo -h -N -o "%N %c" | sort -u | while read -r n c; do echo "  - {name: $n, cores: $c}"; done; } >"$CLUSTER"
  for rep in $(seq 1 "$REPEATS"); do
    for entry in "${SLURM_PANEL[@]}"; do
      split_entry "$entry" || continue
      grid=$WORK/$name.yaml
      if [[ $body == @EXAMPLE ]]; then
        sed "s/^name: .*/name: $name/" "$HERE/../../examples/large-vs-small-cluster.yaml" >"$grid"
      else
        printf 'name: %s\n%s\n' "$name" "$body" >"$grid"
      fi
      runs=$WORK/slurm-runs-$rep
      rm -rf "${runs:?}/$name"
      echo "== $name (Slurm, repeat $rep) $flags" >&2
      # shellcheck disable=SC2086
      "$GRIDRUN" calibrate "$grid" --slurm --cluster "$CLUSTER" --out "$runs" --train-bin "$TRAIN" $flags >"$WORK/cal.txt"
      "$GRIDRUN" simulate "$grid" --cluster "$CLUSTER" --out "$runs" --train-bin "$TRAIN" --format json >"$WORK/pred.json"
      start=$(date +%s.%N)
      # shellcheck disable=SC2086
      "$GRIDRUN" submit "$grid" --slurm --out "$runs" --train-bin "$TRAIN" --time 10 $flags >/dev/null
      ids=$(awk '!/^#/ {print $4}' "$runs/$name/slurm/submitted.tsv" | paste -sd, -)
      while [[ -n "$(squeue -h -j "$ids" -o %i 2>/dev/null)" ]]; do sleep 1; done
      end=$(date +%s.%N)
      "$GRIDRUN" report "$runs/$name" --format json >"$WORK/report.json"
      /usr/bin/python3 - "$WORK/pred.json" "$runs/$name" "$name" "$rep" "$start" "$end" "$WORK/report.json" >>"$ROWS" <<'PY'
import json, sys
pred_file, run_dir, name, rep, start, end, report = sys.argv[1:]
pred = json.load(open(pred_file))
cal = json.load(open(run_dir + "/calibration.json"))
tables = json.load(open(report))["tables"]
rows = [t for t in tables if t["title"].startswith("Phases (")][0]["rows"]
key = pred["compare_by"]
meas = {r["phase"].split("=", 1)[1]: r["makespan_s"] for r in rows}
print(json.dumps({"grid": name + " (Slurm)", "repeat": int(rep), "key": key,
                  "predicted": {k: v["makespan_s"] for k, v in pred["phases"].items()},
                  "arrangement": {k: v["arrangement"] for k, v in pred["phases"].items()},
                  "measured": meas, "calibration_s": cal["cost_s"], "run_s": float(end) - float(start)}))
PY
    done
  done
fi
/usr/bin/python3 - "$ROWS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
if not rows:
    sys.exit("bench_predict.sh: no grid ran (--only names none of the panels run?)")
by = {}
for r in rows:
    by.setdefault(r["grid"], []).append(r)
print("| grid | phase (arrangement) | predicted_s | measured_s | error | predicted winner | measured winner (margin) | run_s | calibration_s (launches) | calibration / run |")
print("|---|---|---:|---:|---:|---|---|---:|---:|---:|")
errs, wrong, decisive, shares = [], [], 0, []
for grid, rs in by.items():
    phases = list(rs[0]["predicted"])
    pred = {p: statistics.median(r["predicted"][p] for r in rs) for p in phases}
    meas = {p: statistics.median(r["measured"][p] for r in rs) for p in phases}
    key = rs[0]["key"]
    pw = min(phases, key=lambda p: pred[p]); mw = min(phases, key=lambda p: meas[p])
    others = sorted(meas[p] for p in phases)
    margin = others[1] / others[0] if len(others) > 1 and others[0] > 0 else float("nan")
    share = statistics.median(r["calibration_s"] / r["run_s"] for r in rs)
    run_s = statistics.median(r["run_s"] for r in rs)
    cal_s = statistics.median(r["calibration_s"] for r in rs)
    launches = [r.get("launches") for r in rs if r.get("launches") is not None]
    shares.append((grid, run_s, share))
    for i, p in enumerate(phases):
        e = (pred[p] - meas[p]) / meas[p]
        errs.append(abs(e))
        print("| %s | %s=%s (%s) | %.1f | %.1f | %+.1f %% | %s | %s | %s | %s | %s |" % (
            grid if i == 0 else "", key, p, rs[0]["arrangement"][p], pred[p], meas[p], 100 * e,
            ("%s=%s" % (key, pw)) if i == 0 else "", ("%s=%s (%.2fx)" % (key, mw, margin)) if i == 0 else "",
            ("%.1f" % run_s) if i == 0 else "",
            ("%.1f (%s)" % (cal_s, max(launches) if launches else "-")) if i == 0 else "",
            ("%.0f %%" % (100 * share)) if i == 0 else ""))
    if margin > 1.15:
        decisive += 1
        if pw != mw:
            wrong.append(grid)
errs.sort()
print()
print("phases: %d, median |error| %.1f %%, worst %.1f %%; winner right in %d of %d grids with a measured margin "
      "over 15 %%%s; repeats: %d" % (len(errs), 100 * statistics.median(errs), 100 * errs[-1], decisive - len(wrong),
      decisive, (" (wrong: %s)" % ", ".join(wrong)) if wrong else "", max(r["repeat"] for r in rows)))
long = [(g, s) for g, run_s, s in shares if run_s >= 60]
if long:
    g, s = max(long, key=lambda x: x[1])
    print("calibration / run over the %d grid(s) that run a minute or more: at most %.0f %% (%s); goal <= 25 %%"
          % (len(long), 100 * s, g))
else:
    print("calibration / run: no grid ran a minute or more")
# --launch cold,warm: the same grids' calibrations and runs both ways, in one sitting.
cold = {g: rs for g, rs in by.items() if g.endswith(" (cold)")}
pairs = [(g, g[:-len(" (cold)")] + " (warm)") for g in cold if g[:-len(" (cold)")] + " (warm)" in by]
if pairs:
    med = lambda g, k: statistics.median(r[k] for r in by[g])
    cal_c = sum(med(c, "calibration_s") for c, w in pairs)
    cal_w = sum(med(w, "calibration_s") for c, w in pairs)
    run_c = sum(med(c, "run_s") for c, w in pairs)
    run_w = sum(med(w, "run_s") for c, w in pairs)
    print("cold vs warm over %d grid(s): calibration %.1f s vs %.1f s (%.2fx), runs %.1f s vs %.1f s (%.2fx)"
          % (len(pairs), cal_c, cal_w, cal_c / cal_w, run_c, run_w, run_c / run_w))
PY
