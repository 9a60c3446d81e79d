# The body of every gridrun array script (slurm/src/script.cpp puts it after the #SBATCH block and
# the variables it reads: LIST, LAUNCHER, RANKS, THREADS, NODES (multi-node arrays only), STEP_FLAGS,
# TRAIN, RESULTS_DIR, ENDED_DIR, EXIT_INTERRUPTED (run/exit_codes.hpp)
# and the per-job paths JOB_FILE, JOB_LOG_OUT, JOB_LOG_ERR, JOB_CHECKPOINTS, JOB_OTHERS, each an array
# of the path before and after the job id, all from the run directory's RunDir; RUN_JOB_PREFIX, the
# name every Slurm job of this run starts with). Kept as a file so that it reads, and can be checked, as the bash it is.
# These comment lines above the marker are not copied into the scripts.
# ---- 8< ----
# ---- task body (generated; same for every task of this array) ----
set -uo pipefail
LINE=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" "$LIST")
if [[ -z "$LINE" ]]; then
  echo "gridrun: no line $((SLURM_ARRAY_TASK_ID + 1)) in $LIST" >&2
  exit 2
fi
RESTART=${SLURM_RESTART_COUNT:-0}
# $ENDED_DIR/<job> holds the exit code of a job that ended for good (not interrupted): a restart of
# the task (after requeue) skips it and resumes only the interrupted ones.
mkdir -p "$ENDED_DIR"
ALLOC_CVD=${CUDA_VISIBLE_DEVICES:-}
read -r -a ALLOC_GPUS <<<"${ALLOC_CVD//,/ }"
MPI_ROOT=()
if [[ $(id -u) -eq 0 ]]; then MPI_ROOT=(--allow-run-as-root); fi
PIDS=()
JOBS=()
# USR1 (Slurm's warning before the time limit) and TERM go to every runner: they checkpoint and
# exit $EXIT_INTERRUPTED (75). The trap only runs because the runners are in the background and this shell waits.
FORWARDED=0
# shellcheck disable=SC2317  # called by the traps below, which shellcheck does not follow
forward() {
  FORWARDED=1
  echo "gridrun: $(date -Is) got SIG$1, forwarding to ${#PIDS[@]} runner(s)"
  local p
  for p in "${PIDS[@]}"; do kill -s "$1" "$p" 2>/dev/null; done
}
trap 'forward USR1' USR1
trap 'forward TERM' TERM
# The other Slurm jobs running on this task's nodes (not this task, not this run's: RUN_JOB_PREFIX),
# as squeue lists them now; appended to each job's JOB_OTHERS file at the task's start and end, so
# that the report can say a phase shared its nodes (docs/slurm.md). "unknown" when squeue fails.
OTHERS=""
others_now() {
  local listing jobid task user name
  if ! listing=$(timeout 30 squeue -h -t R -w "${SLURM_JOB_NODELIST:-${SLURMD_NODENAME:-localhost}}" \
      -o '%A %i %u %j' 2>&1); then
    OTHERS="unknown squeue: ${listing//$'\n'/ }"$'\n'
    return
  fi
  OTHERS=""
  while read -r jobid task user name; do
    [[ -z "$jobid" || "$jobid" == "${SLURM_JOB_ID:-}" || "$name" == "$RUN_JOB_PREFIX"* ]] && continue
    OTHERS+="job $task $user $name"$'\n'
  done <<<"$listing"
}
others_append() {  # others_append start|end JOB
  printf '%s %s task %s\n%s' "$1" "$(date +%s)" "${SLURM_ARRAY_JOB_ID:-}_${SLURM_ARRAY_TASK_ID:-}" \
    "$OTHERS" >>"${JOB_OTHERS[0]}$2${JOB_OTHERS[1]}"
}
others_now

for STEP in $LINE; do
  IFS=: read -r JOB R T GPUS CORES <<<"$STEP"
  R=${R:-$RANKS}
  T=${T:-$THREADS}
  # This job's files: the run directory's paths above around the job id. Plain expansion, no
  # printf format: a backslash or % of the run directory stays what it is (issue 45).
  JOB_JSON=${JOB_FILE[0]}$JOB${JOB_FILE[1]}
  JOB_OUT=${JOB_LOG_OUT[0]}$JOB${JOB_LOG_OUT[1]}
  JOB_ERR=${JOB_LOG_ERR[0]}$JOB${JOB_LOG_ERR[1]}
  JOB_CKPT=${JOB_CHECKPOINTS[0]}$JOB${JOB_CHECKPOINTS[1]}
  if [[ $RESTART -gt 0 && -f "$ENDED_DIR/$JOB" ]]; then
    echo "gridrun: job $JOB ended (exit $(cat "$ENDED_DIR/$JOB")) before this restart, skipped"
    continue
  fi
  rm -f "$ENDED_DIR/$JOB"
  RESUME=()
  if [[ $RESTART -gt 0 ]] || compgen -G "$JOB_CKPT/*" >/dev/null; then
    RESUME=(--resume)
  fi
  ENVS=("OMP_NUM_THREADS=$T")
  GRES=()
  if [[ -n "${GPUS:-}" ]]; then
    if [[ "$LAUNCHER" == srun ]]; then
      # A packed step asks Slurm for its own GPUs (without --gres a step would claim all of the
      # job's GPUs and the next step would wait); Slurm sets its CUDA_VISIBLE_DEVICES.
      GRES=("--gres=gpu:$R")
    else
      # mpirun steps share the allocation: the placement's indices -> this allocation's devices.
      CVD=""
      for G in ${GPUS//,/ }; do CVD+="${CVD:+,}${ALLOC_GPUS[$G]:-$G}"; done
      ENVS+=("CUDA_VISIBLE_DEVICES=$CVD")
    fi
  fi
  others_append start "$JOB"
  echo "gridrun: $(date -Is) task ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID} restart $RESTART:" \
       "job $JOB ($R x $T${GPUS:+, gpus $GPUS}${CORES:+, cores $CORES}) ${RESUME[*]}"
  case "$LAUNCHER" in
    srun) CMD=(srun --mpi=pmix "${STEP_FLAGS[@]}" "${GRES[@]}" --nodes="${NODES:-1}" --ntasks="$R" --cpus-per-task="$T") ;;
    mpirun) CMD=(mpirun "${MPI_ROOT[@]}" -np "$R" --bind-to none) ;;
  esac
  # `env` runs inside each rank, after Slurm has set the step's own CUDA_VISIBLE_DEVICES.
  # --launched-at: the step's start, so the job file can tell srun/mpirun launch from set-up.
  "${CMD[@]}" env "${ENVS[@]}" "$TRAIN" --job "$JOB_JSON" --out "$RESULTS_DIR" \
      --launched-at "$(date +%s.%N)" "${RESUME[@]}" >>"$JOB_OUT" 2>>"$JOB_ERR" &
  PIDS+=($!)
  JOBS+=("$JOB")
done

RC=0
REQUEUE=0
for I in "${!PIDS[@]}"; do
  P=${PIDS[$I]}
  # A trapped signal interrupts `wait`; keep waiting until the runner has really exited.
  while kill -0 "$P" 2>/dev/null; do wait "$P"; done
  wait "$P"
  S=$?
  echo "gridrun: $(date -Is) job ${JOBS[$I]} exited with $S"
  # EXIT_INTERRUPTED: checkpointed. Killed by the forwarded USR1/TERM (138/143) before the runner could catch it
  # (a warning during start-up): requeue too; it resumes from its latest checkpoint, if any.
  if [[ $S -eq $EXIT_INTERRUPTED ]] || [[ $FORWARDED -eq 1 && ($S -eq 138 || $S -eq 143) ]]; then
    REQUEUE=1
  else
    echo "$S" >"$ENDED_DIR/${JOBS[$I]}"
    if [[ $S -ne 0 ]]; then RC=$S; fi
  fi
done
# The task's end: who else runs on its nodes now that its jobs have exited.
others_now
for J in "${JOBS[@]}"; do others_append end "$J"; done
if [[ $REQUEUE -eq 1 ]]; then
  # Checkpointed: requeue this task; it restarts with SLURM_RESTART_COUNT > 0 and --resume.
  echo "gridrun: $(date -Is) requeueing $SLURM_JOB_ID"
  if scontrol requeue "$SLURM_JOB_ID"; then exit 0; fi
  exit "$EXIT_INTERRUPTED"
fi
exit $RC
