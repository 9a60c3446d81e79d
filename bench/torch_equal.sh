#!/usr/bin/env bash
# gridrun vs PyTorch on the same training: mlp, Fashion-MNIST, 1 epoch (937 steps at global batch
# 64), SGD momentum 0.9 + weight decay, same initial weights (--init-out) and batches; prints the
# worst per-step relative loss difference over the first 50 steps and both final test accuracies,
# for 1 and 2 gridrun ranks. Usage: bench/torch_equal.sh [build/bin/gridrun-train]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
train=${1:-$here/build/bin/gridrun-train}
for r in 1 2; do
  /usr/bin/python3 "$here/tests/runner/torch_equal.py" "$train" "$r" --epochs 1
done
