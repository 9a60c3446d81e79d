#!/usr/bin/env bash
# Quick start, step 2: install what is missing (test tools and the pinned PyTorch wheel included),
# build, and run the whole test suite with ctest, in four lanes:
#   1. build/       Debian's LibTorch 1.13, CPU only: every test.
#   2. lint         scripts/lint.sh on that build: clang-format, clang-tidy, shellcheck, 0 findings.
#   3. build-asan/  the same sources with -fsanitize=address,undefined: the unit tests (and the
#                   scenarios labelled asan_lane: the warm worker loop) and the fuzz
#                   corpus replay (label unit), zero sanitizer reports (docs/architecture.md).
#   4. build-cuda/  the CUDA configuration (CUDA, NCCL, NVML ON) against the wheel's LibTorch 2.15,
#                   built on this machine whether or not it has a GPU (benchmarks off; ccache gives
#                   it the Debian lane's objects of every module but runner/): the unit tests, the GPU tests
#                   (they skip with "no GPU" where there is none) and the CPU scenarios labelled
#                   cuda_lane (torch_equal, scheduler end-to-end on CPU jobs). docs/gpu.md says what
#                   this proves without a GPU.
# Usage: bash scripts/test.sh [--lane debian|lint|asan|cuda|all]   (as root, or a user with sudo)
# Exit code: non-zero if any lane failed. Ends with the counts of each lane (and its 12 slowest
# tests: where CI's time goes) and of all together: passed, failed, and skipped by reason (a test
# whose tool is missing skips with a reason, see tests/needs.sh; under CI=true that is a failure for
# what the install steps install), after the last 30 lines of each failed test's output. Under
# CI=true a missing CUDA toolkit (/usr/local/cuda) fails the CUDA lane instead of skipping it.
set -euo pipefail
cd "$(dirname "$0")/.."
lane=all
while (($#)); do
  case $1 in
    --lane) lane=$2; shift ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) echo "test.sh: unknown option $1 (usage: test.sh [--lane debian|lint|asan|cuda|all])" >&2; exit 2 ;;
  esac
  shift
done
case $lane in debian|lint|asan|cuda|all) ;; *) echo "test.sh: --lane must be debian, lint, asan, cuda or all, not '$lane'" >&2; exit 2 ;; esac

t_start=$(date +%s)
# The Debian packages first; the pinned PyTorch wheel's environment (.venv-wheel: 2.9 GB downloaded
# and unpacked, network and disk rather than CPU) is made beside the Debian lane's build, which does
# not use it; the Debian lane's tests (torch_equal against torch 2.15, torchrun) and the CUDA lane
# wait for it.
scripts/install-deps.sh --test
mkdir -p build-logs
wheel_pid='' wheel_ready=''
if [[ $lane == all || $lane == debian || $lane == cuda ]]; then
  scripts/install-deps.sh --wheel >build-logs/wheel.log 2>&1 &
  wheel_pid=$!
fi
# wait_wheel: waits once for the wheel's environment; its log is printed either way.
wait_wheel() {
  [[ -n $wheel_ready ]] && return "$wheel_ready"
  local t0 wrc=0
  t0=$(date +%s)
  wait "$wheel_pid" || wrc=1
  sed 's/^/install-deps (wheel): /' build-logs/wheel.log
  wheel_ready=$wrc
  if ((wrc == 0)); then
    lane_lines+=("wheel environment: ready ($(($(date +%s) - t0)) s waited for it)")
  else
    lane_lines+=("wheel environment: FAILED (build-logs/wheel.log)")
    echo "test.sh: FAIL: scripts/install-deps.sh --wheel (log above)" >&2
    rc=1
  fi
  return "$wrc"
}
junits=()
rc=0

# The end of the output is what a CI log keeps: each lane's build and test times and outcome are
# collected here and printed last, with the tail of any build that failed (a CI run once lost its
# ASan lane without a word that survived).
lane_lines=()
failed_builds=()
# build_lane NAME CMD...: runs a lane's build, its output both shown and kept in build-logs/NAME.log.
build_lane() {
  local name=$1 t0 brc=0
  shift
  mkdir -p build-logs
  t0=$(date +%s)
  "$@" 2>&1 | tee "build-logs/$name.log" || brc=1
  if ((brc == 0)); then
    lane_lines+=("lane $name: built in $(($(date +%s) - t0)) s")
  else
    lane_lines+=("lane $name: BUILD FAILED after $(($(date +%s) - t0)) s (build-logs/$name.log)")
    failed_builds+=("$name")
  fi
  return "$brc"
}

# asan_build: configures and builds build-asan (see lane 3 below). Called through build_lane, which
# the linter cannot follow (SC2317: "unreachable").
# shellcheck disable=SC2317
asan_build() {
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S . -B build-asan "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DGRIDRUN_SANITIZE=address,undefined -DGRIDRUN_BUILD_BENCH=OFF \
    -DGRIDRUN_WITH_CUDA=OFF >/dev/null && cmake --build build-asan -j "$(nproc)"
}

# run_ctest DIR NAME [ctest args]: ctest in DIR with a JUnit file, then that lane's counts.
run_ctest() {
  local dir=$1 name=$2
  shift 2
  local junit=$PWD/$dir/ctest-junit-$name.xml t0
  rm -f "$junit"
  t0=$(date +%s)
  local trc=0
  (cd "$dir" && ctest --output-on-failure --timeout 900 -j 2 --output-junit "$junit" "$@") || trc=1
  ((trc == 0)) || rc=1
  echo "test.sh: lane $name ran its tests in $(($(date +%s) - t0)) s"
  lane_lines+=("lane $name: tests $( ((trc == 0)) && echo passed || echo FAILED) in $(($(date +%s) - t0)) s")
  python3 scripts/ctest-summary.py --slowest 12 "$junit" || echo "test.sh: no counts (could not read $junit)" >&2
  [[ -f $junit ]] && junits+=("$junit")
}

# The Debian and CUDA lanes compile every module but runner/ with the same commands: through ccache
# (install-deps --test) the CUDA lane takes those objects from the Debian lane's build.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)

if [[ $lane == all || $lane == debian || $lane == lint ]]; then
  if build_lane debian scripts/build.sh "${launcher[@]}"; then
    if [[ $lane != lint ]]; then
      wait_wheel || true
      run_ctest build debian
    fi
  else
    echo "test.sh: FAIL: lane debian did not build (log above)" >&2
    rc=1
  fi
fi

if [[ $lane == all || $lane == lint ]]; then
  t0=$(date +%s)
  if scripts/lint.sh --build build; then
    lane_lines+=("lane lint: clean in $(($(date +%s) - t0)) s")
  else
    echo "test.sh: FAIL: lane lint (findings above)" >&2
    lane_lines+=("lane lint: FINDINGS in $(($(date +%s) - t0)) s (above)")
    rc=1
  fi
fi

if [[ $lane == all || $lane == asan ]]; then
  # ASan + UBSan (GRIDRUN_SANITIZE): -O1 keeps the reports' stacks readable and the build short;
  # bench/ is not built. Leak checks are on; the suppressions name third-party libraries only
  # (tests/sanitizers/lsan.supp, each with its why). Any report fails its test.
  if build_lane asan asan_build; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0 \
      run_ctest build-asan asan -L unit
    # The scenarios labelled asan_lane launch ASan-built ranks under mpirun: Open MPI's own leaks
    # are suppressed by library name, which needs full stacks (fast_unwind_on_malloc=0, slower).
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:fast_unwind_on_malloc=0 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0 \
      run_ctest build-asan asan-scenarios -L asan_lane
  else
    echo "test.sh: FAIL: lane asan did not build (log above)" >&2
    rc=1
  fi
fi

if [[ $lane == all || $lane == cuda ]]; then
  if [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
    if [[ ${CI:-} == true ]]; then
      echo "test.sh: FAIL: no CUDA toolkit at /usr/local/cuda; CI=true, where the CUDA lane must build" >&2
      rc=1
    else
      echo "test.sh: SKIP lane cuda: no CUDA toolkit at /usr/local/cuda"
    fi
  else
    # No benchmarks: the lane runs tests only (bench/ is built and linted in the Debian lane).
    # It builds against the wheel's LibTorch.
    wait_wheel || true
    if build_lane cuda scripts/device-build.sh --no-test -- -DGRIDRUN_BUILD_BENCH=OFF "${launcher[@]}"; then
      run_ctest build-cuda cuda -L 'unit|gpu|cuda_lane'
    else
      echo "test.sh: FAIL: lane cuda did not build (scripts/device-build.sh --no-test, log above)" >&2
      rc=1
    fi
  fi
fi

# Nothing outlives this script: a wheel environment no lane waited for (a lane's build failed) is
# waited for here.
if [[ -n $wheel_pid && -z $wheel_ready ]]; then wait_wheel || true; fi
for name in "${failed_builds[@]}"; do
  echo "test.sh: the last 40 lines of lane $name's build (build-logs/$name.log):"
  tail -n 40 "build-logs/$name.log" | sed 's/^/  | /'
done
for line in "${lane_lines[@]}"; do echo "test.sh: $line"; done
echo "test.sh: all lanes in $(($(date +%s) - t_start)) s"
# Last, the counts of all lanes together and the end of each failed test's output: a CI log is
# often kept only by its end.
if ((${#junits[@]} > 0)); then
  python3 scripts/ctest-summary.py --tails 30 "${junits[@]}" || true
fi
exit "$rc"
