# Shared helpers for the Slurm scenario tests (sourced). Every wait is a poll with a deadline.
set -euo pipefail

FAIL_MSG=""
fail() { FAIL_MSG="FAIL: $*"; echo "$FAIL_MSG" >&2; exit 1; }
note() { echo "--- $*"; }

# At exit: when the scenario failed, what the cluster and the runs under $WORK said at that moment
# (digest); then AT_EXIT's commands (a scenario's own cleanup, after the digest has listed what it
# cleans). A CI log is often kept only by its end, so this evidence (each task log's last gridrun
# lines: what ran where and how each job ended; each job's last error line) comes right before
# the scenario's last line, its FAIL message again.
AT_EXIT=()
on_exit() {
  local rc=$? cmd
  set +e  # a digest and cleanups, as much of them as can be had
  if ((rc != 0 && rc != 77)); then digest "$rc"; fi
  for cmd in "${AT_EXIT[@]}"; do "$cmd"; done
  if ((rc != 0 && rc != 77)); then clear_queue; fi
  return 0
}
# After a failure, nothing of this scenario is left queued or running on the cluster: the next
# scenario (they take turns, RESOURCE_LOCK slurm_cluster) would otherwise start on a busy cluster
# and fail for this one's reason. The cluster is the tests' own, so every job on it is theirs.
clear_queue() {
  [[ -f "${SLURM_CONF:-}" ]] || return 0
  "$(dirname "${BASH_SOURCE[0]}")/local-cluster.sh" clear "$(dirname "$SLURM_CONF")" >&2
}
digest() {
  local rc=$1 f
  {
    echo "--- exit $rc; nodes, queue and runs at that moment:"
    if [[ -f "${SLURM_CONF:-}" ]]; then
      timeout 20 sinfo -h -N -o '  node %N %T %E' 2>&1 | head -5
      timeout 20 squeue -h -o '  job %i %j %T %R' 2>&1 | head -12
    fi
    if [[ -n "${WORK:-}" && -d "$WORK" ]]; then
      while read -r f; do
        echo "  ${f#"$WORK"/}:"
        tail -n 3 "$f" | cut -c1-200 | sed 's/^/    /'
      done < <(find "$WORK" -path '*/logs/slurm-*.out' | sort | head -12)
      while read -r f; do
        [[ -s $f ]] && echo "  ${f#"$WORK"/}: $(tail -n 1 "$f" | cut -c1-200)"
      done < <(find "$WORK" -path '*/logs/*.err' | sort | head -12)
    fi
    if [[ -n $FAIL_MSG ]]; then echo "$FAIL_MSG"; fi
  } >&2
}
trap on_exit EXIT

# wait_until SECONDS DESCRIPTION CMD...: polls CMD every WAIT_POLL_S (default 0.5) seconds until it
# succeeds; fails the test after SECONDS.
wait_until() {
  local secs=$1 what=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@"; do
    if ((SECONDS >= deadline)); then
      fail "timed out after ${secs}s waiting for: $what"  # the exit's digest lists the queue
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
