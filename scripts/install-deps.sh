#!/usr/bin/env bash
# Installs whatever Debian 12 packages gridrun needs and are missing. Idempotent: a machine that has
# everything is left untouched and no package index is fetched. Run as root or with sudo.
#   scripts/install-deps.sh          build + run dependencies
#   scripts/install-deps.sh --test   also what the test suite needs (h5py, Slurm, munge, chromium,
#                                    clang-format/clang-tidy/shellcheck for scripts/lint.sh), and
#                                    .venv-test/: PyPI's tensorboard (scripts/test-requirements.txt)
#                                    beside Debian's h5py, for the TensorBoard export's read-back test
#   scripts/install-deps.sh --wheel  also the pinned PyTorch wheel environment .venv-wheel/ (torch
#                                    2.15 CUDA wheel + numpy + h5py, scripts/wheel-requirements.txt):
#                                    what scripts/device-build.sh builds build-cuda/ against
#   --list                           print the package names (one a line) and install nothing;
#                                    tests/needs.sh asks it which tools CI is sure to have
set -euo pipefail
cd "$(dirname "$0")/.."
test_pkgs=0 list=0 wheel=0
for a in "$@"; do
  case "$a" in
    --test) test_pkgs=1 ;;
    --wheel) wheel=1 ;;
    --list) list=1 ;;
    -h|--help) sed -n 2,11p "$0"; exit 0 ;;
    *) echo "install-deps: unknown option $a (usage: install-deps.sh [--test] [--wheel] [--list])" >&2; exit 2 ;;
  esac
done
# openssh-client: Open MPI's mpirun refuses to start, even on one node, without an rsh/ssh agent.
pkgs=(build-essential cmake ninja-build git pkg-config
      libtorch-dev libopenblas0-openmp libopenmpi-dev openmpi-bin openssh-client zlib1g-dev
      libhdf5-dev hdf5-tools libboost-program-options-dev libyaml-cpp-dev libgtest-dev nlohmann-json3-dev
      libprotobuf-dev protobuf-compiler
      python3 python3-h5py python3-numpy dataset-fashion-mnist)
if ((test_pkgs)); then
  # iproute2 + util-linux: the multi-host Slurm tests' hosts are network/UTS namespaces (ip, nsenter).
  pkgs+=(slurm-wlm munge procps iproute2 util-linux python3-torch chromium fonts-liberation)
  # The own-model examples' ConvNeXt-T and ViT-B/16 (examples/models/export_models.py).
  pkgs+=(python3-torchvision)
  # Lint (scripts/lint.sh) and the fuzz targets' clang build (bench/fuzz/run.sh).
  pkgs+=(clang-format-14 clang-tidy-14 shellcheck clang-14 libclang-rt-14-dev)
  pkgs+=(python3-venv)  # .venv-test/ (below)
  # scripts/test.sh's CUDA lane compiles every module but runner/ exactly as the Debian lane did:
  # ccache hands those objects over (about half of that lane's build).
  pkgs+=(ccache)
fi
if ((wheel)); then
  pkgs+=(python3-venv)  # Debian's python3 makes the venv; ensurepip lives in this package
fi
if ((list)); then
  printf '%s\n' "${pkgs[@]}"
  exit 0
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#pkgs[@]} packages present"
else
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: done"
fi

# The test venv: Debian packages no tensorboard, so the TensorBoard read-back test
# (tests/report/e2e_tensorboard.py, need `tensorboard` in tests/needs.sh) runs in .venv-test/, made
# with --system-site-packages so that it uses Debian's h5py and numpy, with the pinned tensorboard
# from PyPI. Idempotent like the wheel venv: left alone while it holds what the requirements name.
if ((test_pkgs)); then
  tvenv=$PWD/.venv-test
  treq=scripts/test-requirements.txt
  if [[ -x $tvenv/bin/python3 ]] && cmp -s "$treq" "$tvenv/gridrun-requirements.txt" &&
     "$tvenv/bin/python3" -c "import tensorboard, h5py" 2>/dev/null; then
    echo "install-deps --test: $tvenv up to date"
  else
    rm -rf "$tvenv"
    /usr/bin/python3 -m venv --system-site-packages "$tvenv"
    "$tvenv/bin/pip" install --quiet --disable-pip-version-check -r "$treq"
    cp "$treq" "$tvenv/gridrun-requirements.txt"
    echo "install-deps --test: $tvenv made ($("$tvenv/bin/python3" -c 'import tensorboard; print("tensorboard", tensorboard.__version__)'))"
  fi
fi
((wheel)) || exit 0

# The wheel environment. Why the whole wheel with its nvidia-* dependencies (2.9 GB to download,
# 5.4 GB installed) and not `torch --no-deps` on /usr/local/cuda's libraries (1.1 GB with the four
# the toolkit lacks): torch 2.15 is built against CUDA 13.2 and NCCL 2.30; the toolkit here is 13.0
# with an older NCCL, and libtorch_cuda.so does not load on it (undefined ncclCommResume & co.), and
# cuSPARSELt, NVSHMEM and cuFile are not in the toolkit at all. docs/gpu.md has the measurements.
# Idempotent: the venv records the requirements it was made from and is left alone while they match.
# The downloaded wheels are kept in a cache folder (~/.cache/gridrun/wheels) that `pip download -d`
# reuses ("File was already downloaded"), so a rebuilt venv downloads nothing. Why not only pip's
# HTTP cache: on these machines it stored nothing for the wheel files (measured: ~/.cache/pip stayed
# empty after a 3 GB download, presumably the registry's responses are not cacheable), while a
# folder of wheels is reused by any pip.
venv=$PWD/.venv-wheel
req=scripts/wheel-requirements.txt
stamp=$venv/gridrun-requirements.txt
if [[ -x $venv/bin/python ]] && cmp -s "$req" "$stamp" &&
   "$venv/bin/python" -c "import torch, numpy, h5py" 2>/dev/null; then
  echo "install-deps --wheel: $venv up to date (torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)'))"
  exit 0
fi
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
dl=${XDG_CACHE_HOME:-$HOME/.cache}/gridrun/wheels
mkdir -p "$dl"
t0=$(date +%s)
# pip download first, into a folder, so that the download (network or pip's cache) and the install
# are timed apart; its "Downloading NAME (SIZE)" and "Using cached NAME" lines are what we count.
"$venv/bin/pip" download --progress-bar off --disable-pip-version-check -d "$dl" -r "$req" >"$dl/pip.log" 2>&1 || {
  cat "$dl/pip.log" >&2; echo "install-deps --wheel: pip download failed (log above)" >&2; exit 1; }
t1=$(date +%s)
awk -v secs=$((t1 - t0)) '
  /^ *Downloading / { n++; v = $(NF-1); u = $NF; gsub(/[(]/, "", v); v += 0
                      if (u ~ /^GB/) v *= 1024; else if (u ~ /^kB/) v /= 1024; mb += v }
  /^ *Using cached |^ *File was already downloaded / { c++ }
  END { printf "install-deps --wheel: downloaded %d files, %.0f MB, in %d s; %d already in the cache\n", n, mb, secs, c }' "$dl/pip.log"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-index --find-links "$dl" -r "$req"
t2=$(date +%s)
cp "$req" "$stamp"
echo "install-deps --wheel: installed in $((t2 - t1)) s, $(du -sh "$venv" | cut -f1) in $venv" \
     "(torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)'))"
