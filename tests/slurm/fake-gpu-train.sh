#!/usr/bin/env bash
# Stand-in for gridrun-train in the GPU scenario (this machine has no GPU and no CUDA): each rank
# records the CUDA_VISIBLE_DEVICES Slurm (or the packed script) gave it, with start and end times
# and its host (the multi-host scenario checks that GPU work lands on GPU hosts only).
# A rank of a 1-rank job then waits until MIN_PEERS (default 2) different 1-rank jobs have
# started, so that at least two jobs are certainly running at the same time when the scenario
# checks that overlapping jobs never share a device. Only 1-rank jobs wait for one another: they
# are submitted first (FIFO priority) and need one core each, so two of them always fit side by
# side, while a 2-rank job may fill this 2-core node and must never wait for a job it blocks.
# The wait is for a condition, not a time: the deadline only bounds a broken run.
#   called as: fake-gpu-train.sh --job RUN/jobs/<id>.json --out RUN/results [--resume]
set -euo pipefail
# shellcheck source=fake-train-args.sh
source "$(dirname "$0")/fake-train-args.sh"
rank=${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-0}}
ranks=$(grep -o '"ranks":[0-9]*' "$job" | head -1 | cut -d: -f2)
dir="$out/../gpucheck"
mkdir -p "$dir"
start=$(date +%s.%N)
echo "$start" >"$dir/$id.$rank.start"
if [[ "$ranks" == 1 ]]; then
  touch "$dir/$id.solo"
  min_peers=${GRIDRUN_TEST_MIN_PEERS:-2}
  deadline=$((SECONDS + 240))
  while (($(find "$dir" -name '*.solo' | wc -l) < min_peers)); do
    ((SECONDS < deadline)) || { echo "fake-gpu-train: $id: no peer job started within 240 s" >&2; exit 1; }
    sleep 0.1
  done
fi
echo "$id $rank ${CUDA_VISIBLE_DEVICES:-unset} $start $(date +%s.%N) ${SLURM_JOB_ID:-none} $(hostname)" \
  >"$dir/$id.$rank.rec"
