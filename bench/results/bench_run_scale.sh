#!/usr/bin/env bash
# Commands on finished runs of many jobs (issue 36): status (table/json/csv), collect, report
# (text, HTML), status after 10 job files changed, a first status with no index, `gridrun run` and
# `gridrun simulate` of the finished grid, against the floor of one python3 + h5py process reading
# every job's /summary. Median of --runs (default 5) per figure. The runs are made by
# gridrun-test-make-run (real JobWriter files, each its own job of the run's grid).
# Usage: bash bench/results/bench_run_scale.sh [--build DIR] [--runs N] [--sizes "1000 10000"]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build runs=5 sizes="1000 10000"
while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --runs) runs=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    -h|--help) sed -n 2,7p "$0"; exit 0 ;;
    *) echo "bench_run_scale: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
gridrun=$PWD/$build/bin/gridrun
py=/usr/bin/python3  # Debian's, with python3-h5py (a pyenv python3 earlier in PATH may lack it)
[[ -x $py ]] || py=python3
make_run=$PWD/$build/bin/gridrun-test-make-run
for b in "$gridrun" "$make_run"; do
  [[ -x $b ]] || { echo "bench_run_scale: $b not built (cmake --build $build)" >&2; exit 2; }
done
work=$(mktemp -d /tmp/gridrun-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT

# median_of N CMD...: runs CMD N times (output discarded), prints the median wall time in seconds.
median_of() {
  local n=$1
  shift
  local times=()
  for ((r = 0; r < n; r++)); do
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1 || { echo "bench_run_scale: failed: $*" >&2; return 1; }
    t1=$(date +%s.%N)
    times+=("$(awk "BEGIN{print $t1 - $t0}")")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'
}

status_after_change() {  # rewrites 10 job files, then one status (the figure is the status alone)
  "$make_run" "$grid" "$work/runs" --rewrite 10 2>/dev/null
  local t0 t1
  t0=$(date +%s.%N)
  "$gridrun" status "$run" >/dev/null
  t1=$(date +%s.%N)
  awk "BEGIN{print $t1 - $t0}"
}

cold_status() {  # the index removed: every job file read once (one guarded child)
  rm -f "$run/results/.gridrun-index"
  local t0 t1
  t0=$(date +%s.%N)
  "$gridrun" status "$run" >/dev/null
  t1=$(date +%s.%N)
  awk "BEGIN{print $t1 - $t0}"
}

median_fn() {
  local n=$1 fn=$2 times=()
  for ((r = 0; r < n; r++)); do times+=("$($fn)"); done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'
}

floor_py='
import glob, sys, h5py
n = 0
for f in sorted(glob.glob(sys.argv[1] + "/results/*.h5")):
    with h5py.File(f, "r") as h:
        s = {k: h["summary"][k][()] for k in h["summary"]}
        st = h.attrs["status"]
        n += 1
print(n)
'

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), commit $(git rev-parse --short HEAD)"
printf '| jobs | command | median s (of %s) | per job ms | vs h5py floor |\n|---|---|---|---|---|\n' "$runs"
for n in $sizes; do
  grid=$work/scale$n.yaml
  "$py" - "$n" >"$grid" <<'PY'
import sys
n = int(sys.argv[1])
print(f"name: scale{n}\ndefaults:\n  model: mlp\n  dataset: synthetic\n  epochs: 1\n  device: cpu")
print("seeds: [" + ", ".join(str(i) for i in range(n)) + "]")
PY
  "$make_run" "$grid" "$work/runs" 2>&1 | sed 's/^/# /'
  run=$work/runs/scale$n
  "$gridrun" status "$run" >/dev/null  # builds the index once, as the run loop would have
  floor=$(median_of "$runs" "$py" -c "$floor_py" "$run")
  row() { awk -v n="$n" -v c="$1" -v t="$2" -v f="$floor" 'BEGIN{printf "| %s | %s | %s | %.2f | %.2fx |\n", n, c, t, t*1000/n, t/f}'; }
  row "floor: python3 + h5py, every /summary" "$floor"
  row "status (table)" "$(median_of "$runs" "$gridrun" status "$run")"
  row "status --format json" "$(median_of "$runs" "$gridrun" status "$run" --format json)"
  row "status --format csv" "$(median_of "$runs" "$gridrun" status "$run" --format csv)"
  row "status after 10 files changed" "$(median_fn "$runs" status_after_change)"
  row "status, no index (first read)" "$(median_fn "$runs" cold_status)"
  "$gridrun" status "$run" >/dev/null
  row "collect" "$(median_of "$runs" "$gridrun" collect "$run")"
  row "report (text)" "$(median_of "$runs" "$gridrun" report "$run")"
  row "report --html" "$(median_of "$runs" "$gridrun" report "$run" --html "$work/r.html")"
  row "run (nothing left to run)" "$(median_of "$runs" "$gridrun" run "$grid" --out "$work/runs")"
  row "simulate" "$(median_of "$runs" "$gridrun" simulate "$grid" --out "$work/runs")"
  rm -rf "$run"
done
