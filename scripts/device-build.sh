#!/usr/bin/env bash
# Builds gridrun's CUDA configuration on a GPU machine that has PyTorch's wheel (its LibTorch, NCCL
# and CUDA runtime are what gridrun-train links against) and runs the unit and GPU tests.
#
# Why a separate script: such machines (cloud images, the lent H100s) usually have CUDA and the
# wheel but not every Debian -dev package gridrun needs, and often no network. Whatever is missing
# is taken from Debian 12 .debs in a folder (default ./.devdeps, filled beforehand on a machine with
# apt by `scripts/device-build.sh --download`), unpacked with dpkg -x into a private prefix: nothing
# is installed system-wide. docs/gpu.md has the whole procedure and what each test proves.
#
# Usage:
#   scripts/device-build.sh --download        # on a Debian 12 machine: fetch the .debs into .devdeps
#   scripts/device-build.sh [--no-test] [--python PY] [--build DIR] [--debs DIR] [-- extra cmake args]
#   --python PY   the Python whose torch is the CUDA wheel (default: .venv-wheel/bin/python3, made by
#                 scripts/install-deps.sh --wheel, else python3 on PATH)
#   --no-test     configure and build only (scripts/test.sh runs the CUDA lane's tests itself)
# Without a GPU (CI's CUDA lane) this builds the same binaries; the tests then run on the CPU and the
# GPU tests skip with "no GPU" (docs/gpu.md).
# Exit code: the first failing step's (configure, build, ctest -L 'unit|gpu|cuda_lane').
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build="build-cuda"
debs=$root/.devdeps
run_tests=1
extra=()
py=""
# Debian 12 packages that GPU images commonly lack. Boost.Program_options is the one the lent H100
# image lacks (its Boost has headers only); nlohmann-json is header-only.
deb_pkgs=(libboost-program-options1.74.0 libboost-program-options1.74-dev libboost1.74-dev
          libboost-program-options-dev nlohmann-json3-dev
          libprotobuf-dev libprotobuf32 libprotobuf-lite32 libprotoc32 protobuf-compiler)
while (($#)); do
  case $1 in
    --download)
      mkdir -p "$debs" && cd "$debs"
      apt-get download "${deb_pkgs[@]}"
      echo "device-build: .debs in $debs ($(du -sh . | cut -f1))"
      exit 0 ;;
    --no-test) run_tests=0 ;;
    --python) py=$2; shift ;;
    --build) build=$2; shift ;;
    --debs) debs=$(realpath "$2"); shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n 2,21p "$0"; exit 0 ;;
    *) echo "device-build: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

if [[ -z $py ]]; then
  if [[ -x $root/.venv-wheel/bin/python3 ]]; then py=$root/.venv-wheel/bin/python3; else py=python3; fi
fi
torch_prefix=$($py -c "import torch; print(torch.utils.cmake_prefix_path)") || {
  echo "device-build: $py cannot import torch: this script needs PyTorch's CUDA wheel" >&2; exit 2; }
torch_lib=$($py -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))")
# The wheel's NCCL first: libtorch_cuda loads it through its RPATH, and one process holds one
# libnccl.so.2, so gridrun must be compiled against the same one (torch 2.15 calls NCCL 2.30
# functions that /usr/local/cuda's older NCCL lacks). CUDA's own NCCL only when the wheel has none.
nccl_root=$($py -c "import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])" 2>/dev/null || true)
if [[ -n $nccl_root ]]; then
  if [[ ! -e $nccl_root/lib/libnccl.so && -e $nccl_root/lib/libnccl.so.2 ]]; then
    # The wheel ships only the soname; the linker needs the plain name. Link it in our prefix.
    mkdir -p "$root/$build/nccl/lib"
    ln -sf "$nccl_root/lib/libnccl.so.2" "$root/$build/nccl/lib/libnccl.so"
    ln -sfn "$nccl_root/include" "$root/$build/nccl/include"
    nccl_root=$root/$build/nccl
  fi
fi

# Boost.Program_options from the carried .debs when the system has none.
prefix=$root/$build/deps
# The Python that has torch also has numpy and h5py there: the scenario tests run under it.
# The torch folder itself on CMAKE_PREFIX_PATH too, so that TorchConfig's find_library calls find
# the wheel's libraries before a system LibTorch (Debian's libtorch-dev). The wheel's library folders
# lead the build RPATH, so that one CUDA runtime, cuBLAS and NCCL (the wheel's, which LibTorch was
# built against) are loaded, not /usr/local/cuda's older ones with the same sonames.
torch_dir=${torch_lib%/lib}
nv=${torch_dir%/torch}/nvidia
rpath="$torch_lib"
for d in "$nv"/*/lib; do [[ -d $d ]] && rpath+=";$d"; done
cmake_args=(-DCMAKE_BUILD_TYPE=Release -DGRIDRUN_WITH_CUDA=ON "-DCMAKE_PREFIX_PATH=$torch_prefix;$torch_dir"
            "-DCMAKE_BUILD_RPATH=$rpath"
            "-DGRIDRUN_SYSTEM_PYTHON=$(command -v "$py")")
[[ -n $nccl_root ]] && cmake_args+=("-DGRIDRUN_NCCL_ROOT=$nccl_root")
if ! compgen -G "/usr/lib/x86_64-linux-gnu/libboost_program_options.so*" >/dev/null &&
   ! compgen -G "/usr/lib/libboost_program_options.so*" >/dev/null; then
  ls "$debs"/libboost-program-options*.deb >/dev/null 2>&1 || {
    echo "device-build: no Boost.Program_options here and no .debs in $debs (run --download on a Debian 12 machine)" >&2; exit 2; }
  mkdir -p "$prefix"
  for f in "$debs"/*.deb; do dpkg -x "$f" "$prefix"; done
  cmake_args+=("-DBoost_DIR=$prefix/usr/lib/x86_64-linux-gnu/cmake/Boost-1.74.0" -DBoost_NO_SYSTEM_PATHS=ON
               "-Dboost_headers_DIR=$prefix/usr/lib/x86_64-linux-gnu/cmake/boost_headers-1.74.0"
               "-Dboost_program_options_DIR=$prefix/usr/lib/x86_64-linux-gnu/cmake/boost_program_options-1.74.0"
               "-Dnlohmann_json_DIR=$prefix/usr/share/cmake/nlohmann_json")
  export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
# protobuf (the TensorBoard export, report/) from the carried .debs when the system has no protoc.
if ! command -v protoc >/dev/null; then
  ls "$debs"/protobuf-compiler*.deb >/dev/null 2>&1 || {
    echo "device-build: no protoc here and no .debs in $debs (run --download on a Debian 12 machine)" >&2; exit 2; }
  mkdir -p "$prefix"
  for f in "$debs"/*protobuf*.deb "$debs"/libprotoc*.deb; do dpkg -x "$f" "$prefix"; done
  cmake_args+=("-DProtobuf_PROTOC_EXECUTABLE=$prefix/usr/bin/protoc" "-DProtobuf_INCLUDE_DIR=$prefix/usr/include"
               "-DProtobuf_LIBRARY=$prefix/usr/lib/x86_64-linux-gnu/libprotobuf.so")
  export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
export LD_LIBRARY_PATH=$torch_lib${nccl_root:+:$nccl_root/lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
echo "device-build: configuring $build (LibTorch from $torch_prefix)"
cmake -S . -B "$build" "${gen[@]}" "${cmake_args[@]}" "${extra[@]}"
cmake --build "$build" -j "$(nproc)"
((run_tests)) || exit 0
cd "$build"
# The GPU tests need the real GPU; the unit tests prove the CUDA build did not break the CPU paths
# (and catch C++ runtime interposition between LibTorch and our binaries).
ctest -L 'unit|gpu|cuda_lane' --output-on-failure -j "$(nproc)" --timeout 600
