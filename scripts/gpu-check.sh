#!/usr/bin/env bash
# shellcheck disable=SC2317  # the step functions run by name (--step NAME)
# What only a lent GPU can confirm, as one script that fits a short device lease (about 15 minutes
# of device time in all, machine start included). Each step runs in its own process under its own
# time box (`timeout`), in the order of value, so a late step cannot eat the lease and an early
# one that overruns is cut, not the rest. Every step logs to --out/NAME.log and says in the
# summary whether it ran, passed, failed or was cut at its box.
#
# Default steps (issue 55's order; boxes in seconds, 9.5 minutes in all):
#   build    (130) the CUDA configuration against the machine's own PyTorch wheel (device-build.sh)
#   anchor   (150) PyTorch eager and eager channels_last, 12 ResNet rows, medians of 5 windows
#   formats  (150) bench/gpu/formats.yaml --launch warm: gridrun NCHW, NHWC, cuda_graph, 5 repeats
#                  (resumed by the next call: the whole grid needs ~9 minutes)
#   compile  (120) torch.compile, compile channels_last, reduce-overhead, rows in priority order
#   table    (25)  BENCHMARKS.md's table from what the steps above left, plus the operator profiles
# Named only (--only NAME): tests (gpu label), share (examples/gpu-share.yaml predicted and run),
#   bf16 (two bf16 jobs), resnets (examples/gpu-resnets.yaml x5), warmgpu (bench/gpu/warm.yaml cold
#   twice and warm once: per-step losses within the cold runs' spread), studies
#   (examples/gpu-studies.yaml: the published studies at lease size, with operator tables),
#   ownscript (examples/own-script/compare-gpu.yaml as command jobs: issue 56 on a GPU), ownshare
#   (two of them side by side on one GPU, jobs_per_gpu=2).
#
# Usage: scripts/gpu-check.sh [--out DIR] [--skip-build] [--only NAME ...] [--scale F]
#   --out DIR     logs, JSON lines and the runs' result files (no checkpoints) land here
#                 (default: gpu-check-out)
#   --skip-build  use build-cuda/ as it is
#   --scale F     multiply every time box by F (e.g. 0.5 for a lease already half spent)
# Exit code: the number of steps that failed or were cut. Run it with `.devdeps/` carried
# (`scripts/device-build.sh --download` on a Debian machine first), and `.fmnist/` for ownscript and
# ownshare (a copy of /usr/share/datasets/fashion-mnist, which the device machine lacks).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD
out=gpu-check-out
build=1
scale=1
only=()
one_step=""
while (($#)); do
  case $1 in
    --out) out=$2; shift ;;
    --skip-build) build=0 ;;
    --only) only+=("$2"); shift ;;
    --scale) scale=$2; shift ;;
    --step) one_step=$2; shift ;;  # internal: run one step's body (under the parent's time box)
    -h|--help) awk 'NR > 2 && !/^#/ { exit } NR > 2 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
out=$(realpath "$out")
runs=${GPU_CHECK_RUNS:-/tmp/gpu-check-runs}
anchor_file=${ANCHOR:-$root/../shared/gpu/pytorch_eager_anchor.py}
torch_lib=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))" 2>/dev/null)
export LD_LIBRARY_PATH=$torch_lib:$root/build-cuda/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=$root/build-cuda/bin

# ---- the steps' bodies --------------------------------------------------------------------------
s_build() { scripts/device-build.sh --no-test --python "$(command -v python3)"; }

s_anchor() {
  python3 bench/gpu/gpu_bench.py anchor --anchor "$anchor_file" --modes eager,eager_cl \
    --out "$out/anchor-eager.jsonl"
}

# Not cleared first: a second call resumes the grid where the last box cut it (the whole grid is
# ~9 minutes on an H200: per job 1.1-1.7 s of set-up and 1-7 s of cuDNN autotuning besides its steps).
s_formats() {
  local rc=0
  "$bin/gridrun" run bench/gpu/formats.yaml --launch warm --out "$runs/formats" --width 120 || rc=$?
  echo "processes left:"; pgrep -a gridrun-train || echo "none"
  return "$rc"
}

# Compiled modes, one mode over the rows before the next (reduce-overhead first: CUDA graphs are
# what cuda_graph is compared with), small batches first: a compile costs 20-40 s, so a short box
# gets the rows where the modes differ most.
s_compile() {
  python3 bench/gpu/gpu_bench.py anchor --anchor "$anchor_file" --modes compile_ro,compile_cl,compile \
    --order mode --out "$out/anchor-compile.jsonl" \
    --configs resnet18:32:fp32,resnet50:32:fp32,resnet18:128:bf16,resnet50:128:bf16,resnet18:32:bf16,resnet50:32:bf16,resnet18:128:fp32,resnet50:128:fp32,resnet18:512:bf16,resnet50:512:bf16,resnet18:512:fp32,resnet50:512:fp32
}

# Whatever the steps left: the table, the profiles, the job files (no checkpoints) for later.
s_table() {
  local d=$runs/formats/gpu-formats
  # One archive: the device tool brings back a limited number of files per call.
  tar -czf "$out/formats-results.tgz" -C "$d" results state.json events.log 2>/dev/null
  python3 bench/gpu/gpu_bench.py table --anchor-results "$out"/anchor-*.jsonl --runs "$d" \
    | tee "$out/table.md"
  "$bin/gridrun" report "$d" --profile 15 --width 120 || true
  "$bin/gridrun" status "$d" --width 120 | tail -n 8 || true
}

s_tests() {
  local rc=0
  ctest --test-dir build-cuda -L gpu --output-on-failure --timeout 300 -j 2 || rc=$?
  ctest --test-dir build-cuda -R 'bindings|interpose' --output-on-failure || rc=$?
  return "$rc"
}

s_share() {
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

s_bf16() {
  local d m rc=0
  d=$(mktemp -d)
  for m in resnet18 lenet; do
    "$bin/gridrun-train" --model "$m" --dataset synthetic --device gpu --precision bf16 \
      --batch-per-rank 128 --train-samples 8192 --test-samples 512 --epochs 1 \
      --out "$d/$m" || rc=$?
  done
  return "$rc"
}

s_resnets() {
  local i rc=0
  rm -rf "$runs/resnets"
  for i in 1 2 3 4 5; do
    "$bin/gridrun" run examples/gpu-resnets.yaml --out "$runs/resnets/r$i" --width 120 || rc=$?
    if pgrep -a gridrun-train; then echo "run $i left processes behind"; rc=1; fi
  done
  return "$rc"
}

# Item 5: a warm grid's per-step losses against two cold runs of it (within their spread).
s_warmgpu() {
  local d=$runs/warmgpu rc=0
  rm -rf "$d"
  "$bin/gridrun" run bench/gpu/warm.yaml --out "$d/cold1" --launch cold --width 120 || rc=$?
  "$bin/gridrun" run bench/gpu/warm.yaml --out "$d/cold2" --launch cold --width 120 || rc=$?
  "$bin/gridrun" run bench/gpu/warm.yaml --out "$d/warm" --launch warm --width 120 || rc=$?
  python3 - "$d" <<'PY' || rc=$?
import glob, os, sys
import h5py, numpy as np
d = sys.argv[1]
def losses(run):
    out = {}
    for p in glob.glob(os.path.join(d, run, "gpu-warm", "results", "*.h5")):
        with h5py.File(p, "r") as f:
            out[os.path.basename(p)] = (f.attrs["param.model"], f.attrs["param.precision"],
                                        np.asarray(f["steps/loss"][:], dtype=float))
    return out
c1, c2, w = losses("cold1"), losses("cold2"), losses("warm")
bad = 0
for k in sorted(c1):
    m, p, a = c1[k]
    b, c = c2[k][2], w[k][2]
    spread = float(np.max(np.abs(a - b))) if len(a) == len(b) else float("inf")
    dw = float(max(np.max(np.abs(c - a)), np.max(np.abs(c - b)))) if len(c) == len(a) else float("inf")
    ok = dw <= max(spread, 1e-6) * 1.5 + 1e-6
    bad += not ok
    print(f"{k} {m} {p}: steps {len(a)}; cold-cold max |dloss| {spread:.3g}; warm-cold max {dw:.3g}; {'within' if ok else 'OUTSIDE'} the spread")
sys.exit(1 if bad or not c1 else 0)
PY
  return "$rc"
}

# Item 3: the seeds' studies at lease size (examples/gpu-studies.yaml), with operator tables.
s_studies() {
  local d=$runs/studies rc=0
  rm -rf "$d"
  "$bin/gridrun" run examples/gpu-studies.yaml --out "$d" --width 120 || rc=$?
  "$bin/gridrun" report "$d/gpu-studies" --width 120 || rc=$?
  "$bin/gridrun" report "$d/gpu-studies" --profile 10 --width 120 || rc=$?
  tar -czf "$out/studies-results.tgz" -C "$d/gpu-studies" results 2>/dev/null
  return "$rc"
}

# Fashion-MNIST where the example script reads it (Debian's dataset-fashion-mnist), from a carried
# .fmnist/ (the package's four files) on a machine without the package.
fmnist_files() {
  local data=/usr/share/datasets/fashion-mnist
  if [[ ! -e $data/train-images-idx3-ubyte.gz && -d $root/.fmnist ]]; then
    mkdir -p "$data" && cp "$root"/.fmnist/*.gz "$data"/
  fi
}

# Issue 56 on a GPU: examples/own-script/compare-gpu.yaml (a torchrun-style DDP script, NCCL) as
# command jobs on the one GPU there is (ranks=1, two seeds): calibrated, predicted, run, reported;
# the recorded losses against the script's printed ones and against the same script under the
# wheel's torchrun; NVML's per-process samples; two jobs side by side (jobs_per_gpu=2); and a
# kill -9 of gridrun mid-job leaving no program on the GPU. Fashion-MNIST from a carried .fmnist/
# (the Debian package's four files) where the machine has no /usr/share/datasets/fashion-mnist.
s_ownscript() {
  local d=$runs/ownscript grid=examples/own-script/compare-gpu.yaml rc=0
  fmnist_files
  rm -rf "$d"
  "$bin/gridrun" calibrate "$grid" --only ranks=1 --out "$d" --accept-load || rc=$?
  "$bin/gridrun" simulate "$grid" --only ranks=1 --out "$d" || rc=$?
  "$bin/gridrun" run "$grid" --only ranks=1 --out "$d" --width 120 || rc=$?
  "$bin/gridrun" simulate "$grid" --only ranks=1 --out "$d" --against "$d/own-script-gpu" || rc=$?
  "$bin/gridrun" status "$d/own-script-gpu" --width 120 || rc=$?
  "$bin/gridrun" report "$d/own-script-gpu" --width 120 || rc=$?
  "$bin/gridrun" export "$d/own-script-gpu" --format tensorboard --out "$d/tb" || rc=$?
  python3 - "$d/own-script-gpu" "$root/examples/own-script/train_ddp.py" <<'PY' || rc=$?
import glob, json, math, os, re, subprocess, sys
import h5py, numpy as np
run, script = sys.argv[1:]
bad = 0
for p in sorted(glob.glob(os.path.join(run, "results", "*.h5"))):
    jid = os.path.basename(p)[:-3]
    with h5py.File(p, "r") as f:
        a = dict(f.attrs)
        st = a.get("status")
        st = st.decode() if isinstance(st, bytes) else st
        n = int(f["steps/rows"][0]) if "steps/rows" in f else len(f["steps/loss"])
        loss = np.asarray(f["steps/loss"][:n], dtype=float)
        util = {k: np.asarray(f["util"][k][:], dtype=float) for k in f["util"].keys()} if "util" in f else {}
    gpu_cols = {k: v for k, v in util.items() if "gpu" in k.lower()}
    seen = {k: float(np.nanmax(v)) for k, v in gpu_cols.items() if v.size and np.isfinite(v).any()}
    log = open(os.path.join(run, "logs", jid + ".out")).read()
    printed = re.findall(r"^step (\d+) loss ([0-9.eE+-]+)$", log, re.M)
    same = len(printed) == n and all("%.8f" % l == t for (_, t), l in zip(printed, loss))
    print(f"{jid}: status {st}, gpus {a.get('gpus')}, steps {n}, recorded = printed: {same}; "
          f"GPU columns with samples: {seen or 'NONE'}")
    bad += st != "completed" or not same or not seen or n == 0
    params = json.load(open(os.path.join(run, "jobs", jid + ".json")))["params"] \
        if os.path.exists(os.path.join(run, "jobs", jid + ".json")) else None
    if params and params.get("seed") == 1:
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "1", script,
               "--device", "gpu", "--seed", "1", "--lr", repr(float(params["lr"])),
               "--batch-size", str(params["batch_per_rank"]), "--epochs", str(params["epochs"])]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd="/tmp")
        mine = re.findall(r"^step (\d+) loss ([0-9.eE+-]+)$", r.stdout, re.M)
        eq = mine == printed
        print(f"torchrun --nproc-per-node 1, seed 1: exit {r.returncode}, {len(mine)} steps, equal to gridrun's: {eq}")
        if not eq and mine and printed:
            d = max(abs(float(x[1]) - float(y[1])) for x, y in zip(mine, printed))
            print(f"  max |dloss| {d:.3g}; stderr tail: {r.stderr[-400:]}")
        bad += not eq
sys.exit(1 if bad else 0)
PY
  # kill -9 of gridrun mid-job: nothing of the job may stay.
  "$bin/gridrun" run "$grid" --only ranks=1 --set epochs=30 --out "$d/kill" --width 120 >"$d/kill.log" 2>&1 &
  local pid=$! i
  for i in $(seq 1 120); do
    compgen -G "$d/kill/own-script-gpu/logs/*.heartbeat" >/dev/null &&
      grep -q '"step":' "$d"/kill/own-script-gpu/logs/*.heartbeat 2>/dev/null && break
    sleep 0.5
  done
  pgrep -af train_ddp.py | head -3
  kill -9 "$pid"
  for i in $(seq 1 60); do pgrep -f "train_ddp.py|gridrun-exec" >/dev/null || break; sleep 0.5; done
  if pgrep -af 'train_ddp.py|gridrun-exec'; then echo "kill -9: processes LEFT"; rc=1; else echo "kill -9: nothing left after $((i / 2)) s"; fi
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
  tar -czf "$out/ownscript-results.tgz" -C "$d" own-script-gpu/results own-script-gpu/logs own-script-gpu/state.json \
    own-script-gpu/calibration.json 2>/dev/null
  return "$rc"
}

# Issue 56's jobs_per_gpu on a GPU: two command jobs side by side on the one GPU; NVML's samples
# per process, so each job's GPU memory is its own program's, not the pair's.
s_ownshare() {
  local d=$runs/ownshare grid=examples/own-script/compare-gpu.yaml rc=0
  fmnist_files
  rm -rf "$d"
  "$bin/gridrun" run "$grid" --set ranks=1 --set jobs_per_gpu=2 --out "$d" --width 120 || rc=$?
  "$bin/gridrun" report "$d/own-script-gpu" --width 120 | sed -n '/^Phases/,/^$/p;/^Jobs/,/^$/p' || rc=$?
  python3 - "$d/own-script-gpu" <<'PY' || rc=$?
import glob, os, sys
import h5py, numpy as np
bad = 0
for p in sorted(glob.glob(os.path.join(sys.argv[1], "results", "*.h5"))):
    with h5py.File(p, "r") as f:
        st = f.attrs.get("status")
        st = st.decode() if isinstance(st, bytes) else st
        mem = np.asarray(f["util"]["gpu_mem_bytes"][:], dtype=float)
        t = np.asarray(f["util"]["t"][:], dtype=float) if "t" in f["util"] else None
    peak = float(np.nanmax(mem)) if np.isfinite(mem).any() else float("nan")
    print(f"{os.path.basename(p)}: {st}, peak GPU memory {peak / 2**30:.2f} GiB (its own process's)")
    # Alone, one such job holds about 1.9 GiB of the device; the device held 3.2 GiB with both.
    bad += st != "completed" or not 0 < peak < 2.5 * 2**30
sys.exit(1 if bad else 0)
PY
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
  return "$rc"
}

if [[ -n $one_step ]]; then
  declare -F "s_$one_step" >/dev/null || { echo "gpu-check: no step $one_step" >&2; exit 2; }
  "s_$one_step"
  exit $?
fi

# ---- the driver ---------------------------------------------------------------------------------
summary=()
failed=0
named() { local s; for s in "${only[@]}"; do [[ $s == "$1" ]] && return 0; done; return 1; }
step() {  # step NAME BOX_SECONDS DEFAULT(1|0): runs s_NAME in its own process, cut at its box
  local name=$1 box=$2 default=$3 t0=$SECONDS rc verdict
  if ((${#only[@]})); then named "$name" || return 0; else ((default)) || return 0; fi
  box=$(awk -v b="$box" -v s="$scale" 'BEGIN { printf "%d", b * s }')
  echo "=== $name (box ${box}s) $(date -u +%H:%M:%S)"
  timeout -k 15 "$box" bash "$0" --out "$out" --step "$name" >"$out/$name.log" 2>&1 </dev/null
  rc=$?
  tail -n 30 "$out/$name.log"
  case $rc in
    0) verdict="ran, passed" ;;
    124|137) verdict="ran, CUT at its ${box}s box" ;;
    *) verdict="ran, failed rc=$rc" ;;
  esac
  summary+=("$name: $verdict, $((SECONDS - t0)) s")
  echo "$name: $verdict, $((SECONDS - t0)) s" >>"$out/$name.log"
  ((rc == 0)) || failed=$((failed + 1))
}

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
  nproc
} 2>&1 | tee "$out/machine.txt"
((build)) && step build 130 1
step anchor 150 1
step formats 150 1
step compile 120 1
step table 25 1
step tests 300 0
step share 200 0
step bf16 100 0
step resnets 540 0
step warmgpu 120 0
step studies 150 0
step ownscript 240 0
step ownshare 120 0
echo "=== summary"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
exit "$failed"
