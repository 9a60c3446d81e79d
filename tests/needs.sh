#!/usr/bin/env bash
# Run-time check of what a test needs beyond the build, so that every test is always registered and
# a missing tool shows up as a skip with its reason instead of a test that silently is not there.
#
#   needs.sh REQ... -- COMMAND [ARG...]   check, then exec COMMAND (its exit code is the test's)
#   needs.sh REQ...                       check only (for scripts: `needs.sh python3 || exit $?`)
#
# REQ is a Debian package name from the table below (what provides the tool), `root`, or
# `wheel-venv` (the pinned PyTorch wheel in .venv-wheel/, scripts/install-deps.sh --wheel), or
# `tensorboard` (PyPI's tensorboard in .venv-test/, scripts/install-deps.sh --test; a test that needs
# it runs .venv-test/bin/python3, which also sees Debian's h5py and numpy).
# When one is missing: prints "SKIP: <reason>" and exits 77 (the tests' SKIP_RETURN_CODE). Under
# CI=true it prints "FAIL: ..." and exits 1 instead when `scripts/install-deps.sh --test` installs
# that package (CI runs that script first, so a missing tool there is a broken CI, not a reason to
# run fewer tests), and likewise for `root` (CI runs as root: the Slurm tests start daemons).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3  # Debian's: the one python3-h5py and python3-numpy install into

has_cmds() { local c; for c in "$@"; do command -v "$c" >/dev/null 2>&1 || return 1; done; }

# check REQ: 0 if present; else prints what is missing and returns 1.
check() {
  case "$1" in
    python3) [[ -x $PY ]] || { echo "$PY not found"; return 1; } ;;
    python3-h5py | python3-numpy | python3-torch | python3-torchvision)
      local mod=${1#python3-}
      if ! [[ -x $PY ]] || ! "$PY" -c "import $mod" >/dev/null 2>&1; then echo "$PY cannot import $mod"; return 1; fi ;;
    chromium)
      has_cmds chromium || has_cmds chromium-browser || { echo "no chromium (headless browser) on PATH"; return 1; } ;;
    openmpi-bin) has_cmds mpirun || { echo "no mpirun on PATH"; return 1; } ;;
    slurm-wlm)
      has_cmds slurmctld slurmd sbatch squeue scontrol scancel sinfo srun ||
        { echo "Slurm (slurmctld, slurmd, sbatch, ...) not on PATH"; return 1; } ;;
    dataset-fashion-mnist)
      [[ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]] ||
        { echo "no Fashion-MNIST files in /usr/share/datasets/fashion-mnist"; return 1; } ;;
    munge) has_cmds munged munge || { echo "munged/munge not on PATH"; return 1; } ;;
    iproute2) has_cmds ip nsenter unshare || { echo "ip/nsenter/unshare not on PATH"; return 1; } ;;
    wheel-venv)  # the pinned PyTorch wheel environment (scripts/install-deps.sh --wheel)
      if ! "$here/../.venv-wheel/bin/python3" -c "import torch, h5py" >/dev/null 2>&1; then
        echo "no .venv-wheel with torch and h5py"; return 1
      fi ;;
    tensorboard)
      if ! "$here/../.venv-test/bin/python3" -c "import tensorboard, h5py" >/dev/null 2>&1; then
        echo "no .venv-test with tensorboard and h5py"; return 1
      fi ;;
    root) [[ $(id -u) -eq 0 ]] || { echo "not root (the test starts its own Slurm daemons)"; return 1; } ;;
    *) echo "needs.sh: unknown requirement '$1'" >&2; exit 2 ;;
  esac
}

ci_provides() {
  [[ "$1" == root || "$1" == wheel-venv ]] && return 0  # scripts/test.sh runs install-deps.sh --wheel
  [[ "$1" == tensorboard ]] && return 0  # install-deps.sh --test makes .venv-test/
  bash "$here/../scripts/install-deps.sh" --test --list | grep -qx -- "$1"
}

reqs=()
while (($#)) && [[ "$1" != "--" ]]; do reqs+=("$1"); shift; done
(($#)) && shift  # the "--"
# A test run by another Python (GRIDRUN_SYSTEM_PYTHON, e.g. the torch one on a GPU machine) is
# checked against that Python's modules.
if (($#)) && [[ $(basename "$1") == python3* ]]; then PY=$1; fi

for r in "${reqs[@]}"; do
  why=$(check "$r")
  rc=$?
  ((rc == 2)) && exit 2
  if ((rc != 0)); then
    if [[ "${CI:-}" == true ]] && ci_provides "$r"; then
      if [[ "$r" == root ]]; then
        echo "FAIL: $why; CI=true, where this test must run as root"
      else
        echo "FAIL: $why; CI=true and scripts/install-deps.sh --test installs $r"
      fi
      exit 1
    fi
    if [[ "$r" == root ]]; then echo "SKIP: $why";
    elif [[ "$r" == wheel-venv ]]; then echo "SKIP: $why (scripts/install-deps.sh --wheel)"; else echo "SKIP: $why (package $r; scripts/install-deps.sh --test)"; fi
    exit 77
  fi
done
(($#)) || exit 0
exec "$@"
