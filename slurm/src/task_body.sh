# The body of every gridrun array script (slurm/src/script.cpp puts it after the #SBATCH block and
# the variables it reads: GRIDRUN (the gridrun binary: `gridrun job-shape` reads a job's ranks,
# threads, nodes and planned GPUs and cores from its job file, `gridrun worker-msg` writes and
# checks the warm worker's messages), LIST, LAUNCHER, LAUNCH (cold|warm), STEP_FLAGS, TRAIN,
# RESULTS_DIR, ENDED_DIR, WORKERS_DIR, EXIT_INTERRUPTED
# (run/exit_codes.hpp) and the per-job paths JOB_FILE, JOB_LOG_OUT, JOB_LOG_ERR, JOB_CHECKPOINTS,
# JOB_OTHERS, each an array of the path before and after the job id, all from the run directory's
# RunDir; RUN_JOB_PREFIX, the name every Slurm job of this run starts with). Kept as a file so that
# it reads, and can be checked, as the bash it is.
# These comment lines above the marker are not copied into the scripts.
# ---- 8< ----
# ---- task body (generated; same for every task of this array) ----
set -uo pipefail
LINE=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" "$LIST")
if [[ -z "$LINE" ]]; then
  echo "gridrun: no line $((SLURM_ARRAY_TASK_ID + 1)) in $LIST" >&2
  exit 2
fi
TASK=${SLURM_ARRAY_JOB_ID:-}_${SLURM_ARRAY_TASK_ID:-}
RESTART=${SLURM_RESTART_COUNT:-0}
# $ENDED_DIR/<job> holds the exit code of a job that ended for good (not interrupted): a restart of
# the task (after requeue) skips it and resumes only the interrupted ones.
mkdir -p "$ENDED_DIR"
ALLOC_CVD=${CUDA_VISIBLE_DEVICES:-}
read -r -a ALLOC_GPUS <<<"${ALLOC_CVD//,/ }"
MPI_ROOT=()
if [[ $(id -u) -eq 0 ]]; then MPI_ROOT=(--allow-run-as-root); fi
# The other Slurm jobs running on this task's nodes (not this task, not this run's: RUN_JOB_PREFIX),
# as squeue lists them now; appended to each job's JOB_OTHERS file when the job starts and when it
# ends (or is interrupted), so that the report can say a phase shared its nodes (docs/slurm.md).
# "unknown" when squeue fails.
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
OTHERS_AT=-1  # when OTHERS was listed (seconds since the epoch)
others_append() {  # others_append start|end JOB
  # Seconds since the epoch without a fork and without bash 5's EPOCHSECONDS: compute nodes may
  # run bash 4.4 (RHEL 8), which this body supports.
  local now
  printf -v now '%(%s)T' -1
  # A listing of this second serves again: one job's end is the next one's start, and a chain of
  # short jobs (--jobs-per-task) would otherwise ask slurmctld twice per job.
  if [[ $now -ne $OTHERS_AT ]]; then
    others_now
    OTHERS_AT=$now
  fi
  printf '%s %s task %s\n%s' "$1" "$now" "$TASK" "$OTHERS" >>"${JOB_OTHERS[0]}$2${JOB_OTHERS[1]}"
}

# ---- one entry of the line: a chain of jobs ID[+ID...] run one after another on the same ranks,
# threads, nodes, GPUs and cores, which its first job's file says (entry_shape: ENTRY_R ENTRY_T
# ENTRY_N ENTRY_GPUS ENTRY_CORES, through `gridrun job-shape`). It runs in a subshell of its
# own, so that the entries of a packed line run side by side. Its exit status: 0, the last job's
# failure, or EXIT_INTERRUPTED when a job was interrupted (the task is requeued; ended jobs are
# skipped on restart). With LAUNCH=warm the first job of the chain starts a warm worker
# (gridrun-train --worker DIR) that takes the next jobs through DIR's pipes (docs/scheduler.md,
# "Warm launches"); a job that fails in the worker is launched again, cold, with --resume.
STOPPING=0   # a USR1/TERM was forwarded: start no further job
STOP_SIG=""  # ... which one: a launcher started while the trap ran gets it too
RUNNER_PID=""  # pid of the running launcher (srun/mpirun)
ENTRY_DIR=""   # the entry's warm worker folder (none: every job cold)
# shellcheck disable=SC2317  # called by the traps below, which shellcheck does not follow
entry_forward() {
  STOPPING=1
  STOP_SIG=$1
  if [[ -n "$RUNNER_PID" ]]; then kill -s "$1" "$RUNNER_PID" 2>/dev/null; fi
}
job_paths() {  # job_paths JOB: this job's files, the run directory's paths around the job id
  JOB_JSON=${JOB_FILE[0]}$1${JOB_FILE[1]}
  JOB_OUT=${JOB_LOG_OUT[0]}$1${JOB_LOG_OUT[1]}
  JOB_ERR=${JOB_LOG_ERR[0]}$1${JOB_LOG_ERR[1]}
  JOB_CKPT=${JOB_CHECKPOINTS[0]}$1${JOB_CHECKPOINTS[1]}
}
now_precise() {  # NOW: seconds since the epoch to the microsecond, for --launched-at / launched_at
  # bash 5's EPOCHREALTIME (with the locale's decimal point) without a fork, else date (bash 4.4).
  NOW=${EPOCHREALTIME:-}
  if [[ -z "$NOW" ]]; then NOW=$(date +%s.%N); fi
  NOW=${NOW/,/.}
}
wants_resume() {  # after a restart, or when the job has a checkpoint
  [[ $RESTART -gt 0 ]] || compgen -G "$JOB_CKPT/*" >/dev/null
}
launch_job() {  # launch_job JOB [WORKER_DIR]: starts the launcher in the background (RUNNER_PID)
  job_paths "$1"
  local resume=() envs=("OMP_NUM_THREADS=$ENTRY_T") gres=() worker=() cmd cvd g fd
  if wants_resume; then resume=(--resume); fi
  if [[ -n "$ENTRY_GPUS" ]]; then
    if [[ "$LAUNCHER" == srun ]]; then
      # A packed step asks Slurm for its own GPUs (without --gres a step would claim all of the
      # job's GPUs and the next step would wait); Slurm sets its CUDA_VISIBLE_DEVICES.
      gres=("--gres=gpu:$ENTRY_R")
    else
      # mpirun steps share the allocation: the placement's indices -> this allocation's devices.
      cvd=""
      for g in ${ENTRY_GPUS//,/ }; do cvd+="${cvd:+,}${ALLOC_GPUS[$g]:-$g}"; done
      envs+=("CUDA_VISIBLE_DEVICES=$cvd")
    fi
  fi
  if [[ $# -gt 1 ]]; then
    worker=(--worker "$2")
    # The job's ticket (run/worker_channel.hpp): its done message must carry it. In the
    # environment, not on a command line (srun passes the environment; mpirun needs -x).
    new_ticket
    export GRIDRUN_WORKER_TICKET=$TICKET
  fi
  others_append start "$1"
  echo "gridrun: $(date -Is) task $TASK restart $RESTART: job $1 ($ENTRY_R x $ENTRY_T${ENTRY_GPUS:+, gpus $ENTRY_GPUS}${ENTRY_CORES:+, cores $ENTRY_CORES})${resume[*]:+ ${resume[*]}}${worker[*]:+, starts a warm worker}"
  case "$LAUNCHER" in
    srun) cmd=(srun --mpi=pmix "${STEP_FLAGS[@]}" "${gres[@]}" --nodes="$ENTRY_N" --ntasks="$ENTRY_R" --cpus-per-task="$ENTRY_T") ;;
    mpirun) cmd=(mpirun "${MPI_ROOT[@]}" -np "$ENTRY_R" --bind-to none ${worker[*]:+-x GRIDRUN_WORKER_TICKET}) ;;
  esac
  # `env` runs inside each rank, after Slurm has set the step's own CUDA_VISIBLE_DEVICES.
  # --launched-at: the step's start, so the job file can tell srun/mpirun launch from set-up.
  # The launcher must not hold the worker's pipes (bash opens them inheritable): the ranks read
  # end-of-file only when no writer is left but this shell.
  (
    for fd in "${TASK_FDS[@]}" "${DONE_FD:-}"; do [[ -n "$fd" ]] && exec {fd}>&-; done
    now_precise
    exec "${cmd[@]}" env "${envs[@]}" "$TRAIN" --job "$JOB_JSON" --out "$RESULTS_DIR" \
      --launched-at "$NOW" "${resume[@]}" "${worker[@]}" >>"$JOB_OUT" 2>>"$JOB_ERR"
  ) &
  RUNNER_PID=$!
  unset GRIDRUN_WORKER_TICKET
  # A stop that came while this job was being launched (the trap found no launcher to pass it to).
  if [[ $STOPPING -eq 1 ]]; then kill -s "$STOP_SIG" "$RUNNER_PID" 2>/dev/null; fi
}
wait_launched() {  # the launcher's exit status in S
  # A trapped signal interrupts `wait`; keep waiting until the launcher has really exited.
  while kill -0 "$RUNNER_PID" 2>/dev/null; do wait "$RUNNER_PID"; done
  wait "$RUNNER_PID"
  S=$?
  RUNNER_PID=""
}
interrupted() {  # interrupted STATUS: checkpointed (75), or killed by a forwarded USR1/TERM
  # (138/143) before the runner could catch it (a warning during start-up): requeue; it resumes
  # from its latest checkpoint, if any.
  [[ $1 -eq $EXIT_INTERRUPTED ]] || [[ $STOPPING -eq 1 && ($1 -eq 138 || $1 -eq 143) ]]
}
job_ended() {  # job_ended JOB STATUS [how]
  echo "gridrun: $(date -Is) job $1 exited with $2${3:+ $3}"
  echo "$2" >"$ENDED_DIR/$1"
  others_append end "$1"
}
job_interrupted() {  # job_interrupted JOB STATUS: it resumes after the requeue
  echo "gridrun: $(date -Is) job $1 interrupted (exit $2)"
  others_append end "$1"
}
# The warm worker of this entry: a folder of named pipes (run/worker_channel.hpp), opened here
# read-write before the worker starts, so no open blocks and the worker reads end-of-file when this
# shell closes them or dies.
TASK_FDS=()
DONE_FD=""
TICKET=""
FORGED=0
open_worker() {  # open_worker DIR RANKS; on failure nothing is left open (the job runs cold)
  local r fd
  if rm -rf "$1" && mkdir -p "$1" && mkfifo "$1/done" && exec {DONE_FD}<>"$1/done"; then
    for ((r = 0; r < $2; r++)); do
      if ! { mkfifo "$1/task.$r" && exec {fd}<>"$1/task.$r"; }; then
        close_worker
        return 1
      fi
      TASK_FDS+=("$fd")
    done
    return 0
  fi
  close_worker
  return 1
}
close_worker() {  # the worker reads end-of-file and leaves
  local fd
  for fd in "${TASK_FDS[@]}"; do exec {fd}>&-; done
  TASK_FDS=()
  if [[ -n "$DONE_FD" ]]; then exec {DONE_FD}<&-; fi
  DONE_FD=""
}
new_ticket() {  # TICKET: 32 random hex digits, as run::new_worker_ticket makes them
  TICKET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
}
send_job() {  # send_job JOB: the next job's task message to every rank; 1 when none could be made
  job_paths "$1"
  local resume=() fd msg
  if wants_resume; then resume=(--resume); fi
  now_precise
  new_ticket
  # The line is written by the same field tables as the C++ launcher's (run/worker_channel.hpp).
  msg=$("$GRIDRUN" worker-msg task --job-file "$JOB_JSON" "${resume[@]}" --launched-at "$NOW" \
    --log-out "$JOB_OUT" --log-err "$JOB_ERR" --ticket "$TICKET") || return 1
  others_append start "$1"
  echo "gridrun: $(date -Is) task $TASK restart $RESTART: job $1 in the warm worker${resume[0]:+ --resume}"
  for fd in "${TASK_FDS[@]}"; do printf '%s\n' "$msg" >&"$fd"; done
}
entry_shape() {  # entry_shape JOB: ENTRY_R ENTRY_T ENTRY_N ENTRY_GPUS ENTRY_CORES from its job file
  local shape
  job_paths "$1"
  shape=$("$GRIDRUN" job-shape "$JOB_JSON") || return 1
  read -r ENTRY_R ENTRY_T ENTRY_N ENTRY_GPUS ENTRY_CORES <<<"$shape"
  [[ "$ENTRY_GPUS" == - ]] && ENTRY_GPUS=""
  [[ "$ENTRY_CORES" == - ]] && ENTRY_CORES=""
  return 0
}
run_entry() {  # run_entry CHAIN INDEX
  trap 'entry_forward USR1' USR1
  trap 'entry_forward TERM' TERM
  local ids=() todo=() id rc=0 k=0 cur line said
  IFS=+ read -r -a ids <<<"$1"
  # The jobs of a chain share one process (jobs::process_key): the first one's file says its shape.
  if ! entry_shape "${ids[0]}"; then
    echo "gridrun: $(date -Is) task $TASK: job ${ids[0]}'s file gives no shape (gridrun job-shape above); its entry fails" >&2
    for id in "${ids[@]}"; do job_ended "$id" 2; done
    exit 2
  fi
  for id in "${ids[@]}"; do
    if [[ $RESTART -gt 0 && -f "$ENDED_DIR/$id" ]]; then
      echo "gridrun: job $id ended (exit $(cat "$ENDED_DIR/$id")) before this restart, skipped"
    else
      rm -f "$ENDED_DIR/$id"
      todo+=("$id")
    fi
  done
  # Warm only where every rank is on this host: a named pipe does not cross hosts.
  if [[ "$LAUNCH" == warm && "$ENTRY_N" -eq 1 && ${#todo[@]} -gt 1 ]]; then
    ENTRY_DIR="$WORKERS_DIR/slurm-$TASK-$2"
    trap 'close_worker; rm -rf "$ENTRY_DIR"' EXIT
  fi
  while [[ $k -lt ${#todo[@]} && $STOPPING -eq 0 ]]; do
    # The launched job is cold; it starts a worker when a job of the chain follows it.
    cur=$k
    if [[ -n "$ENTRY_DIR" && $((k + 1)) -lt ${#todo[@]} ]] && open_worker "$ENTRY_DIR" "$ENTRY_R"; then
      launch_job "${todo[$k]}" "$ENTRY_DIR"
    else
      launch_job "${todo[$k]}"
    fi
    while [[ ${#TASK_FDS[@]} -gt 0 ]]; do
      line=""
      if ! read -r -t 1 -u "$DONE_FD" line; then
        kill -0 "$RUNNER_PID" 2>/dev/null && continue
        # The worker is gone while a job ran in it; a done message it wrote first still counts.
        read -r -t 0.2 -u "$DONE_FD" line || line=""
        if [[ -z "$line" ]]; then close_worker && break; fi
      fi
      # rank 0's done message: job `cur` completed. A line that is not job `cur`'s with its ticket
      # (forged, stale, cut, too long; `gridrun worker-msg done` says why) retires the worker; the
      # job runs again cold.
      if ! said=$(printf '%s\n' "$line" | "$GRIDRUN" worker-msg 'done' --job "${todo[$cur]}" --ticket "$TICKET"); then
        echo "gridrun: $(date -Is) job ${todo[$cur]}: a done message without its ticket in the worker's pipe; the worker is retired, the job runs again cold"
        kill -KILL "$RUNNER_PID" 2>/dev/null
        close_worker
        FORGED=1
        break
      fi
      job_ended "${todo[$cur]}" 0 "$([[ $cur -gt $k ]] && echo "(warm)")"
      cur=$((cur + 1))
      if [[ $cur -lt ${#todo[@]} && $STOPPING -eq 0 && "$said" == continue ]] &&
          kill -0 "$RUNNER_PID" 2>/dev/null && send_job "${todo[$cur]}"; then
        :
      else
        close_worker
      fi
    done
    wait_launched
    if [[ $FORGED -eq 1 ]]; then
      FORGED=0
      k=$cur
      launch_job "${todo[$k]}"
      wait_launched
    elif [[ $cur -gt $k ]]; then
      # Jobs k..cur-1 completed in the worker; it left after them (retired, or told to: S is its
      # own status), or while job `cur` ran in it (S is that job's).
      k=$cur
      if [[ $k -ge ${#todo[@]} || $S -eq 0 ]]; then continue; fi
      if interrupted "$S" || [[ $STOPPING -eq 1 ]]; then
        job_interrupted "${todo[$k]}" "$S"
        rc=$EXIT_INTERRUPTED && break
      fi
      # (The worker may also have died between two jobs: the job it was to take goes cold too.)
      echo "gridrun: $(date -Is) job ${todo[$k]}: the warm worker exited with $S; again cold"
      launch_job "${todo[$k]}"
      wait_launched
    fi
    if interrupted "$S"; then
      job_interrupted "${todo[$k]}" "$S"
      rc=$EXIT_INTERRUPTED && break
    fi
    job_ended "${todo[$k]}" "$S"
    if [[ $S -ne 0 ]]; then rc=$S; fi
    k=$((k + 1))
  done
  # Jobs left when a stop came between them: the restart runs them.
  if [[ $k -lt ${#todo[@]} ]]; then rc=$EXIT_INTERRUPTED; fi
  # 138 and 143 are what the task reads as an entry the forwarded signal killed before its trap was
  # set (nothing started, requeue): a job that failed with one of them is a failure (its own code is
  # in $ENDED_DIR).
  if [[ $rc -eq 138 || $rc -eq 143 ]]; then rc=1; fi
  exit "$rc"
}

# ---- the task: each entry of the line in a subshell of its own, side by side
PIDS=()
# USR1 (Slurm's warning before the time limit) and TERM go to every entry, which passes them to its
# runner: they checkpoint and exit $EXIT_INTERRUPTED (75). The trap only runs because the entries
# are in the background and this shell waits.
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
E=0
for STEP in $LINE; do
  run_entry "$STEP" "$E" &
  PIDS+=($!)
  E=$((E + 1))
done

RC=0
REQUEUE=0
for P in "${PIDS[@]}"; do
  # A trapped signal interrupts `wait`; keep waiting until the entry has really ended.
  while kill -0 "$P" 2>/dev/null; do wait "$P"; done
  wait "$P"
  S=$?
  # An entry killed by the forwarded signal before its own trap was set had started no runner.
  if [[ $S -eq $EXIT_INTERRUPTED ]] || [[ $FORWARDED -eq 1 && ($S -eq 138 || $S -eq 143) ]]; then
    REQUEUE=1
  elif [[ $S -ne 0 ]]; then
    RC=$S
  fi
done
if [[ $REQUEUE -eq 1 ]]; then
  # Checkpointed: requeue this task; it restarts with SLURM_RESTART_COUNT > 0 and --resume.
  echo "gridrun: $(date -Is) requeueing $SLURM_JOB_ID"
  if scontrol requeue "$SLURM_JOB_ID"; then exit 0; fi
  exit "$EXIT_INTERRUPTED"
fi
exit $RC
