#!/usr/bin/env bash
# Commands on finished runs of many jobs (issue 36): status (table/json/csv), collect, report
# (text, HTML), status after 10 job files changed, a first status with no index, `gridrun run` and
# `gridrun simulate` of the finished grid, against the floor of one python3 + h5py process reading
# every job's /summary, and `gridrun ls` of the run (from its summary cache, issue 60). Median of
# --runs (default 5) per figure, with the peak RSS of the last of them; the figures that read every
# job file (no index, first adoption) once per size from 100,000 jobs on (each takes minutes). The
# runs are made by gridrun-test-make-run (real JobWriter files, each its own job of the run's grid;
# about 100 files a second here, so 100,000 take ~20 min): --keep DIR makes them there and reuses
# them on the next call instead of a temporary folder.
# Usage: bash bench/results/bench_run_scale.sh [--build DIR] [--runs N] [--sizes "1000 10000"]
#                                              [--keep DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build runs=5 sizes="1000 10000" keep=""
while (($#)); do
  case $1 in
    --build) build=$2; shift ;;
    --runs) runs=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --keep) keep=$2; shift ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
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
runs_dir=$work/runs
if [[ -n $keep ]]; then
  mkdir -p "$keep"
  runs_dir=$(cd "$keep" && pwd)
fi

# median_of N CMD...: runs CMD N times (output discarded), prints the median wall time in seconds;
# the last run's peak RSS (MiB, GNU time) goes to $work/rss.
median_of() {
  local n=$1
  shift
  local times=()
  for ((r = 0; r < n; r++)); do
    local t0 t1
    t0=$(date +%s.%N)
    /usr/bin/time -f %M -o "$work/rss" "$@" >/dev/null 2>&1 || { echo "bench_run_scale: failed: $*" >&2; return 1; }
    t1=$(date +%s.%N)
    times+=("$(awk "BEGIN{print $t1 - $t0}")")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)]}'
}

status_after_change() {  # rewrites 10 job files, then one status (the figure is the status alone)
  "$make_run" "$grid" "$runs_dir" --rewrite 10 2>/dev/null
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f %M -o "$work/rss" "$gridrun" status "$run" >/dev/null
  t1=$(date +%s.%N)
  awk "BEGIN{print $t1 - $t0}"
}

cold_status() {  # the index and the status cache removed: every job file read once
  rm -rf "$run/results/.gridrun-index" "$run/.cache"
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f %M -o "$work/rss" "$gridrun" status "$run" >/dev/null
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
printf '| jobs | command | median s (of %s) | per job ms | vs h5py floor | peak RSS MiB |\n|---|---|---|---|---|---|\n' "$runs"
for n in $sizes; do
  grid=$work/scale$n.yaml
  "$py" - "$n" >"$grid" <<'PY'
import sys
n = int(sys.argv[1])
print(f"name: scale{n}\ndefaults:\n  model: mlp\n  dataset: synthetic\n  epochs: 1\n  device: cpu")
print("seeds: [" + ", ".join(str(i) for i in range(n)) + "]")
PY
  run=$runs_dir/scale$n
  # Each figure that reads every job file once is measured once from 100,000 jobs on.
  slow_runs=$runs
  ((n >= 100000)) && slow_runs=1
  if [[ -n $keep && -f $run/state.json ]] && cmp -s "$grid" "$run/grid.yaml"; then
    echo "# reusing $run"
  else
    rm -rf "$run"
    "$make_run" "$grid" "$runs_dir" 2>&1 | sed 's/^/# /'
  fi
  cp "$run/grid.yaml" "$grid"  # the run's own copy: `run` below compares the grid with it
  # The writers' journal as they left it (results/.gridrun-journal, emptied by the first command
  # that reads the run): kept aside, put back before each first adoption. A kept run read before
  # has none left: its adoption reads every file.
  journal=$run/results/.gridrun-journal
  if [[ -f $journal ]]; then cp "$journal" "$work/journal"; else rm -f "$work/journal"; fi
  echo "# $n jobs: writers' journal $([[ -f $work/journal ]] && echo present || echo absent)"
  # The first adoption: `gridrun run` of the finished files with no index (each file read once,
  # or its record taken from the writers' journal).
  adopt() {
    # A run no command has read: no index and none of the run's caches (RUN_DIR/.cache: they
    # hold while no job file changed, and removing the index changes none). `sync`: the copy's
    # writeback is not the adoption's.
    rm -rf "$run/results/.gridrun-index" "$run/.cache"
    if [[ -f $work/journal ]]; then cp "$work/journal" "$journal"; fi
    sync
    local t0 t1
    t0=$(date +%s.%N)
    /usr/bin/time -f %M -o "$work/rss" "$gridrun" run "$grid" --out "$runs_dir" >/dev/null 2>&1
    t1=$(date +%s.%N)
    awk "BEGIN{print $t1 - $t0}"
  }
  floor=$(median_of "$slow_runs" "$py" -c "$floor_py" "$run")
  row() {
    awk -v n="$n" -v c="$1" -v t="$2" -v f="$floor" -v m="$(cat "$work/rss" 2>/dev/null || echo 0)" \
      'BEGIN{printf "| %s | %s | %s | %.2f | %.2fx | %.0f |\n", n, c, t, t*1000/n, t/f, m/1024}'
  }
  row "floor: python3 + h5py, every /summary" "$floor"
  row "first adoption (\`run\`, no index)" "$(median_fn "$slow_runs" adopt)"
  row "status (table)" "$(median_of "$runs" "$gridrun" status "$run")"
  row "status --format json" "$(median_of "$runs" "$gridrun" status "$run" --format json)"
  row "status --format csv" "$(median_of "$runs" "$gridrun" status "$run" --format csv)"
  row "status after 10 files changed" "$(median_fn "$runs" status_after_change)"
  row "status, no index (first read)" "$(median_fn "$slow_runs" cold_status)"
  "$gridrun" status "$run" >/dev/null
  "$gridrun" ls "$run" >/dev/null  # computes and keeps the run's summary
  row "ls of the run (its summary cache)" "$(median_of "$runs" "$gridrun" ls "$run")"
  row "collect" "$(median_of "$runs" "$gridrun" collect "$run")"
  row "report (text)" "$(median_of "$runs" "$gridrun" report "$run")"
  row "report --html" "$(median_of "$slow_runs" "$gridrun" report "$run" --html "$work/r.html")"
  row "run (nothing left to run)" "$(median_of "$runs" "$gridrun" run "$grid" --out "$runs_dir")"
  row "simulate" "$(median_of "$runs" "$gridrun" simulate "$grid" --out "$runs_dir")"
  [[ -n $keep ]] || rm -rf "$run"
done
