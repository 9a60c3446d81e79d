#!/usr/bin/env bash
# GPU benchmark: gridrun-train vs PyTorch eager (the anchor script from ../shared/gpu) on the same
# GPU in the same call, resnet18/resnet50 x batch 32/128/512 x fp32/bf16 (+ cuda_graph at small
# batches), medians of 5 runs, ratio table with MFU and GPU utilisation (bench/gpu/gpu_bench.py).
# Usage: bench/gpu.sh [BUILD_DIR] [-- extra gpu_bench.py flags]   (after scripts/device-build.sh)
#   ANCHOR=path/to/pytorch_eager_anchor.py overrides the anchor's location.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-cuda}
shift || true
[[ ${1:-} == -- ]] && shift
anchor=${ANCHOR:-../shared/gpu/pytorch_eager_anchor.py}
[[ -f $anchor ]] || { echo "bench/gpu.sh: no anchor script at $anchor (set ANCHOR=)" >&2; exit 2; }
torch_lib=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))")
export LD_LIBRARY_PATH=$torch_lib:$PWD/$build/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
exec python3 bench/gpu/gpu_bench.py --train "$build/bin/gridrun-train" --anchor "$anchor" "$@"
