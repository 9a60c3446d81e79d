# Shared helpers for the Slurm scenario tests (sourced). Every wait is a poll with a deadline.
set -euo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "--- $*"; }

# wait_until SECONDS DESCRIPTION CMD...: polls CMD every WAIT_POLL_S (default 0.5) seconds until it
# succeeds; fails the test after SECONDS.
wait_until() {
  local secs=$1 what=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@"; do
    if ((SECONDS >= deadline)); then
      squeue >&2 || true
      fail "timed out after ${secs}s waiting for: $what"
    fi
    sleep "${WAIT_POLL_S:-0.5}"
  done
}

# No job of this run (ids from slurm/submitted.tsv) is listed by squeue any more.
run_drained() {
  local ids
  ids=$(awk '!/^#/ {print $4}' "$1/slurm/submitted.tsv" | paste -sd, -)
  [[ -z "$ids" ]] && return 0
  [[ -z "$(squeue -h -j "$ids" -o %i 2>/dev/null)" ]]
}

# The sbatch ids of one submission.
submission_ids() { awk -v s="$2" '!/^#/ && $1 == s {print $4}' "$1/slurm/submitted.tsv"; }

require_cluster() {
  [[ -n "${SLURM_CONF:-}" && -f "$SLURM_CONF" ]] || fail "SLURM_CONF not set (run through ctest's fixture)"
  scontrol ping | grep -q UP || fail "slurmctld at $SLURM_CONF does not answer"
}

# Skips (ctest SKIP_RETURN_CODE 77) when the real runner is not built; under CI=true that is a
# broken build (LibTorch is a required dependency), so it fails.
require_train() {
  [[ -x "$1" ]] && return 0
  [[ "${CI:-}" == true ]] && fail "$1 not built (the runner target gridrun-train); CI=true"
  echo "SKIP: $1 not built (the runner target gridrun-train)"
  exit 77
}
