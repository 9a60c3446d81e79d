#!/usr/bin/env bash
# Benchmark: `gridrun plan` of a 100,000-job grid end to end (process start, load, expand, print),
# output to a file, for each --format; median of N runs (default 5). Target: under 1 s on the
# 2-core development machine (issue 14). bench_expand measures the library's expansion alone.
#   bench/jobs/bench_plan_cli.sh [GRIDRUN] [RUNS]
set -euo pipefail
GRIDRUN=${1:-build/bin/gridrun}
RUNS=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# 5 models x 10 batch sizes x 10 learning rates x 4 rank counts x 50 seeds = 100,000 jobs.
seeds=$(seq -s ', ' 0 49)
cat >"$work/grid.yaml" <<YAML
name: bench-plan
defaults: {dataset: synthetic, epochs: 1, device: cpu, threads_per_rank: 1}
grid:
  model: [mlp, lenet, resnet18, resnet50, vgg11]
  batch_per_rank: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
  lr: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
  ranks: [1, 2, 4, 8]
seeds: [$seeds]
YAML
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "grid: $("$GRIDRUN" plan "$work/grid.yaml" --format csv 2>&1 >/dev/null)"
for fmt in table json csv; do
  times=()
  for ((i = 1; i <= RUNS; i++)); do
    t0=$(date +%s.%N)
    "$GRIDRUN" plan "$work/grid.yaml" --format "$fmt" >"$work/out.$fmt" 2>/dev/null
    t1=$(date +%s.%N)
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')")
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
  printf 'gridrun plan --format %-5s: %s bytes; runs: %s; median of %d: %.3f s; target < 1 s: %s\n' \
    "$fmt" "$(stat -c %s "$work/out.$fmt")" "${times[*]}" "$RUNS" "$median" \
    "$(awk -v m="$median" 'BEGIN {print (m < 1.0) ? "met" : "MISSED"}')"
done
