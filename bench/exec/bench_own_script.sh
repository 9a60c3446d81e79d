#!/usr/bin/env bash
# Issue 56's benchmark: the same 2-rank DDP job (examples/own-script/train_ddp.py, gloo, CPU)
# launched by torchrun and by `gridrun run` (mpirun + gridrun-exec), alternated, RUNS times each.
# Both use one Python (PY, default .venv-wheel's, whose torchrun works on Python 3.11; Debian's
# 1.13 torchrun does not). Figure per launch: samples trained / wall seconds from the launch to
# its exit (what a user waits for: gridrun's planning, mpirun, recording and report included);
# and gridrun's own steady-state rate from the results file (summary/samples_per_s, after the
# timing warm-up). Prints the medians and gridrun/torchrun (goal >= 0.98).
# Usage: bench/exec/bench_own_script.sh [BUILD_DIR] [RUNS] [STEPS]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=$(realpath "${1:-build}")
runs=${2:-5}
steps=${3:-120}
py=${PY:-$root/.venv-wheel/bin/python3}
torchrun=$(dirname "$py")/torchrun
[[ -x $torchrun ]] || { echo "bench_own_script: no torchrun beside $py (scripts/install-deps.sh --wheel)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
script=$root/examples/own-script/train_ddp.py
batch=32  # per rank; global 64
args=(--device cpu --seed 1 --lr 0.05 --batch-size "$batch" --epochs 1 --max-steps "$steps"
      --train-samples 16384 --test-samples 500)
quoted=$(printf '"%s", ' "${args[@]}")
cat >"$work/one.yaml" <<YAML
name: bench-own
command: ["$py", "$script", ${quoted%, }]
env: {GLOO_SOCKET_IFNAME: lo}
defaults: {device: cpu, ranks: 2, threads_per_rank: 1, global_batch: 64, max_steps: $steps}
YAML
samples=$((steps * batch * 2))
t_torch=() t_grid=() r_grid=()
now() { date +%s.%N; }
for ((i = 1; i <= runs; i++)); do
  for who in torchrun gridrun; do
    [[ $((i % 2)) == 0 ]] && who=$([[ $who == torchrun ]] && echo gridrun || echo torchrun)
    t0=$(now)
    if [[ $who == torchrun ]]; then
      # An explicit free port: the wheel's torchrun never connects its ranks with --master-port 0.
      port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo "$torchrun" --nproc-per-node 2 --master-port "$port" \
        "$script" "${args[@]}" >"$work/torchrun.log" 2>&1
      t_torch+=("$(echo "$(now) - $t0" | bc -l)")
    else
      rm -rf "$work/runs"
      "$build/bin/gridrun" run "$work/one.yaml" --out "$work/runs" >"$work/gridrun.log" 2>&1
      t_grid+=("$(echo "$(now) - $t0" | bc -l)")
      r_grid+=("$(/usr/bin/python3 - "$work/runs/bench-own/results" <<'PY'
import glob, sys, h5py
f = h5py.File(glob.glob(sys.argv[1] + "/*.h5")[0], "r")
print(float(f["summary"]["samples_per_s"][0]))
PY
)")
    fi
  done
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mt=$(median "${t_torch[@]}") mg=$(median "${t_grid[@]}") mr=$(median "${r_grid[@]}")
echo "machine: $(nproc) cores, $(uname -m); python $($py -c 'import torch,sys;print(sys.version.split()[0], "torch", torch.__version__)')"
echo "job: 2 ranks x ${batch} samples, $steps steps = $samples samples; $runs runs each, alternated"
echo "torchrun wall s: ${t_torch[*]}"
echo "gridrun  wall s: ${t_grid[*]}"
echo "gridrun recorded samples/s (steady state): ${r_grid[*]}"
awk -v t="$mt" -v g="$mg" -v n="$samples" -v r="$mr" 'BEGIN {
  printf "median wall: torchrun %.2f s (%.0f samples/s), gridrun %.2f s (%.0f samples/s); gridrun/torchrun = %.3f\n", t, n / t, g, n / g, t / g
  printf "median gridrun recorded steady-state rate: %.0f samples/s\n", r }'
