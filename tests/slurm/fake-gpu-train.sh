#!/usr/bin/env bash
# Stand-in for gridrun-train in the GPU scenario (this machine has no GPU and no CUDA): each rank
# records the CUDA_VISIBLE_DEVICES Slurm (or the packed script) gave it, with start and end times,
# then waits (polling, bounded) until at least MIN_PEERS records exist so that tasks really overlap.
#   called as: fake-gpu-train.sh --job RUN/jobs/<id>.json --out RUN/results [--resume]
set -euo pipefail
job="" out=""
while (($#)); do
  case "$1" in
    --job) job=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) shift ;;
  esac
done
id=$(basename "$job" .json)
rank=${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-0}}
dir="$out/../gpucheck"
mkdir -p "$dir"
start=$(date +%s.%N)
echo "$start" >"$dir/$id.$rank.start"
min_peers=${GRIDRUN_TEST_MIN_PEERS:-2}
deadline=$((SECONDS + 20))
while (($(ls "$dir" | grep -c '\.start$') < min_peers)) && ((SECONDS < deadline)); do sleep 0.1; done
echo "$id $rank ${CUDA_VISIBLE_DEVICES:-unset} $start $(date +%s.%N) ${SLURM_JOB_ID:-}" >"$dir/$id.$rank.rec"
