#!/usr/bin/env bash
# Installs whatever Debian 12 packages gridrun needs and are missing. Idempotent: a machine that has
# everything is left untouched and no package index is fetched. Run as root or with sudo.
#   scripts/install-deps.sh          build + run dependencies
#   scripts/install-deps.sh --test   also what the test suite needs (h5py, Slurm, munge, chromium)
#   --list                           print the package names (one a line) and install nothing;
#                                    tests/needs.sh asks it which tools CI is sure to have
set -euo pipefail
test_pkgs=0 list=0
for a in "$@"; do
  case "$a" in
    --test) test_pkgs=1 ;;
    --list) list=1 ;;
    *) echo "install-deps: unknown option $a (usage: install-deps.sh [--test] [--list])" >&2; exit 2 ;;
  esac
done
# openssh-client: Open MPI's mpirun refuses to start, even on one node, without an rsh/ssh agent.
pkgs=(build-essential cmake ninja-build git pkg-config
      libtorch-dev libopenblas0-openmp libopenmpi-dev openmpi-bin openssh-client zlib1g-dev
      libhdf5-dev hdf5-tools libboost-program-options-dev libyaml-cpp-dev libgtest-dev nlohmann-json3-dev
      python3 python3-h5py python3-numpy dataset-fashion-mnist)
if ((test_pkgs)); then
  pkgs+=(slurm-wlm munge procps python3-torch chromium fonts-liberation)
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
  exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
