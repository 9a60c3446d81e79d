#!/usr/bin/env bash
# Two gridrun binaries on the same finished run, interleaved (A B A B ...), so that load and file
# caches fall on both alike: `gridrun run GRID` with nothing left to run (its report included) and
# `gridrun report RUN_DIR`. Median seconds of --runs each (default 5), the peak RSS of the last,
# and the ratio reference/new. What BENCHMARKS.md's before/after figures of issue 60 came from, on
# the runs bench_run_scale.sh --keep DIR fabricates (gridrun-test-make-run).
# Usage: bash bench/results/bench_against.sh --ref OLD_GRIDRUN --new NEW_GRIDRUN --grid GRID.yaml
#                                            --out PARENT [--runs N]
#   PARENT/NAME is the finished run of GRID (bench_run_scale.sh --keep PARENT makes it).
set -euo pipefail
ref="" new="" grid="" out="" runs=5
while (($#)); do
  case $1 in
    --ref) ref=$2; shift ;;
    --new) new=$2; shift ;;
    --grid) grid=$2; shift ;;
    --out) out=$2; shift ;;
    --runs) runs=$2; shift ;;
    -h|--help) sed -n 2,9p "$0"; exit 0 ;;
    *) echo "bench_against: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
for b in "$ref" "$new"; do [[ -x $b ]] || { echo "bench_against: '$b' is not a program (--ref, --new)" >&2; exit 2; }; done
[[ -f $grid && -d $out ]] || { echo "bench_against: --grid FILE and --out DIR (the run's parent) are required" >&2; exit 2; }
name=$(awk '/^name:/ { print $2; exit }' "$grid")
run_dir=$out/$name
[[ -f $run_dir/state.json ]] || { echo "bench_against: no finished run at $run_dir" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# time_one LABEL BIN ARGS...: appends "seconds" to $tmp/LABEL and the peak RSS (KB) to $tmp/LABEL.rss.
time_one() {
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o "$tmp/t" "$@" >/dev/null 2>&1 || { echo "bench_against: failed: $*" >&2; exit 1; }
  read -r s kb <"$tmp/t"
  echo "$s" >>"$tmp/$label"
  echo "$kb" >"$tmp/$label.rss"
}
median() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for ((i = 0; i < runs; ++i)); do
  for who in ref new; do
    bin=$ref
    [[ $who == new ]] && bin=$new
    time_one "run-$who" "$bin" run "$grid" --out "$out"
    time_one "report-$who" "$bin" report "$run_dir"
  done
done
printf '%-28s %10s %10s %8s %14s %14s\n' command "ref s" "new s" "ref/new" "ref RSS MB" "new RSS MB"
for c in run report; do
  r=$(median "$tmp/$c-ref") n=$(median "$tmp/$c-new")
  label="$c"
  [[ $c == run ]] && label="run (nothing left to run)"
  printf '%-28s %10.2f %10.2f %8.2f %14d %14d\n' "$label" "$r" "$n" "$(awk -v a="$r" -v b="$n" 'BEGIN { print a / b }')" \
    "$(($(cat "$tmp/$c-ref.rss") / 1024))" "$(($(cat "$tmp/$c-new.rss") / 1024))"
done
files=$(find "$run_dir/results" -maxdepth 1 -name '*.h5' | wc -l)
echo "($runs runs each, interleaved; $(nproc) cores; $(basename "$run_dir"): $files job files)"
