#!/usr/bin/env bash
# shellcheck disable=SC2317  # step() runs the functions below by name
# What only a lent GPU can confirm (docs/gpu.md, "What CI proves without a GPU"), as one script
# that fits a short device lease: build the CUDA configuration against the machine's own PyTorch
# wheel, run the `gpu`-label tests, then the calibrated prediction of examples/gpu-share.yaml
# against its real run, and one bf16 job (the channels_last broadcast fix). Two steps run only when
# named with --only: `resnets` runs the 12-job examples/gpu-resnets.yaml five times (no process
# may outlive a run) and `bench` makes BENCHMARKS.md's GPU table from those runs plus cuda_graph and
# PyTorch eager (bench/gpu.sh; ANCHOR= as there).
#
# Usage: scripts/gpu-check.sh [--out DIR] [--skip-build] [--only build|resnets|bench|share|tests|bf16 ...]
#   --out DIR      logs and results are copied here (default: gpu-check-out)
#   --skip-build   use build-cuda/ as it is
# Every step runs even when an earlier one failed (a lease is too short to stop at the first
# failure); the exit code is the number of failed steps. A one-line summary per step ends the log.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
out=gpu-check-out
build=1
only=()
while (($#)); do
  case $1 in
    --out) out=$2; shift ;;
    --skip-build) build=0 ;;
    --only) only+=("$2"); shift ;;
    -h|--help) sed -n 2,14p "$0"; exit 0 ;;
    *) echo "gpu-check: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
out=$(realpath "$out")
summary=()
failed=0
named() { local s; for s in "${only[@]}"; do [[ $s == "$1" ]] && return 0; done; return 1; }
want() { ((${#only[@]} == 0)) || named "$1"; }
step() {  # step NAME COMMAND...: runs it, logs to $out/NAME.log, records the outcome
  local name=$1; shift
  want "$name" || return 0
  local t0=$SECONDS rc
  echo "=== $name: $*"
  "$@" >"$out/$name.log" 2>&1 </dev/null
  rc=$?
  tail -n 25 "$out/$name.log"
  summary+=("$name rc=$rc $((SECONDS - t0))s")
  ((rc == 0)) || failed=$((failed + 1))
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))" || true

((build)) && step build scripts/device-build.sh --no-test --python "$(command -v python3)"
torch_lib=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))")
export LD_LIBRARY_PATH=$torch_lib:$PWD/build-cuda/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=$PWD/build-cuda/bin

runs=${GPU_CHECK_RUNS:-/tmp/gpu-check-runs}

# The gpu label, and the C++ runtime checks whose failure crashed GPU jobs on the lent H200.
tests() {
  local rc=0
  ctest --test-dir build-cuda -L gpu --output-on-failure --timeout 300 -j 2 || rc=$?
  ctest --test-dir build-cuda -R 'bindings|interpose' --output-on-failure || rc=$?
  return "$rc"
}
step tests tests

share() {
  local d=$runs/share
  rm -rf "$d"
  "$bin/gridrun" calibrate examples/gpu-share.yaml --out "$d" --steps 20 &&
  "$bin/gridrun" simulate examples/gpu-share.yaml --out "$d" &&
  "$bin/gridrun" run examples/gpu-share.yaml --out "$d" &&
  "$bin/gridrun" simulate examples/gpu-share.yaml --out "$d" --against "$d/gpu-share" &&
  "$bin/gridrun" report "$d/gpu-share" --width 120 &&
  "$bin/gridrun" status "$d/gpu-share" --format csv
  local rc=$?
  echo "processes left:"; pgrep -a gridrun-train || echo "none"
  return "$rc"
}
step share share

bf16() {
  local d rc=0
  d=$(mktemp -d)
  for m in resnet18 lenet; do
    "$bin/gridrun-train" --model "$m" --dataset synthetic --device gpu --precision bf16 \
      --batch-per-rank 128 --train-samples 8192 --test-samples 512 --epochs 1 \
      --out "$d/$m" || rc=$?
    python3 - "$d/$m" <<'EOF2' || rc=$?
import glob, sys, h5py
path, = glob.glob(sys.argv[1] + "/*.h5")
with h5py.File(path) as f:
    status = f.attrs["status"]
    status = status.decode() if isinstance(status, bytes) else status
    s = {k: float(ds[0]) for k, ds in f["summary"].items()}
    print(path, status, {k: s.get(k) for k in ("samples_per_s", "samples_per_s_wall", "final_test_acc")})
    assert status == "completed", status
EOF2
  done
  return "$rc"
}
step bf16 bf16

# Only when named (--only resnets --only bench): ~9 minutes of a lease together.
# The 12-job grid five times in a row: every job completed, nothing left running after each run.
resnets() {
  local i rc=0
  rm -rf "$runs/resnets"
  for i in 1 2 3 4 5; do
    "$bin/gridrun" run examples/gpu-resnets.yaml --out "$runs/resnets/r$i" --width 120 || rc=$?
    "$bin/gridrun" status "$runs/resnets/r$i/gpu-resnets" --format csv >"$out/resnets-status-r$i.csv" || rc=$?
    grep -c ',completed' "$out/resnets-status-r$i.csv" || true
    if pgrep -a gridrun-train; then echo "run $i left processes behind"; rc=1; fi
  done
  return "$rc"
}
named resnets && step resnets resnets

# BENCHMARKS.md's GPU table: gridrun's eager figures from the five runs above, cuda_graph at batch
# 32 and the anchor (ANCHOR=, default ../shared/gpu) run here, medians of 5.
bench() {
  bench/gpu.sh build-cuda -- --repeats 5 --graph-batches 32 --runs "$runs"/resnets/r*/gpu-resnets
}
named bench && step bench bench

cp build-cuda/Testing/Temporary/LastTest.log "$out/ctest-LastTest.log" 2>/dev/null || true
echo "=== summary"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
exit "$failed"
