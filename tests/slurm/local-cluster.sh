#!/usr/bin/env bash
# A private, single-node Slurm cluster for gridrun's tests: real munged, slurmctld and slurmd
# (Debian 12's slurm-wlm 22.05), started directly (no systemd), everything under one state dir.
#
#   tests/slurm/local-cluster.sh start  [DIR]   install if missing, configure, start, wait for idle
#   tests/slurm/local-cluster.sh stop   [DIR]   stop the daemons started from DIR and delete DIR
#   tests/slurm/local-cluster.sh status [DIR]   sinfo/squeue of that cluster; exit 1 if it is down
#   tests/slurm/local-cluster.sh env    [DIR]   prints `export SLURM_CONF=...` for a shell to eval
#
# DIR defaults to /tmp/gridrun-slurm-<uid>. Clients find the cluster through SLURM_CONF=DIR/slurm.conf,
# so the machine's own /etc/slurm (if any) is never touched. Ports are derived from DIR, so two build
# trees can each run their own cluster. Why these settings (found on Debian 12 in a container):
#   - munged must run as user munge on a socket dir it owns; we run a private munged + key.
#   - GRES gpu needs File= devices or slurmd reports a lower count than configured: four char
#     devices (mknod c 1 3, i.e. /dev/null's numbers) stand in; Slurm then sets CUDA_VISIBLE_DEVICES.
#   - proctrack/linuxproc + task/none work without cgroups; SlurmUser=root.
#   - AuthInfo cred_expire decides how long a requeued job waits before it may start again (default
#     120 s): 5 s keeps the requeue test quick. KillWait 5 s for the same reason.
#   - Addresses are 127.0.0.1, so the host name need not resolve (containers often lack it).
#   - No slurmdbd: accounting is off, so `gridrun status` must work from squeue/scontrol + disk.
#     MinJobAge 3600 s keeps ended jobs (state, Restarts) in scontrol for the scenarios' asserts
#     however long the rest of a scenario takes on a loaded machine (300 s is Slurm's default).
set -euo pipefail

cmd="${1:-}"
DIR="${2:-/tmp/gridrun-slurm-$(id -u)}"
DIR="$(realpath -m "$DIR")"
CONF="$DIR/slurm.conf"
HOST="$(hostname -s)"
WAIT_S=90

die() { echo "local-cluster: $*" >&2; exit 1; }
log() { echo "local-cluster: $*"; }

# Ports from a checksum of DIR: stable per dir, different between build trees.
port_base() { local h; h=$(printf '%s' "$DIR" | cksum | cut -d' ' -f1); echo $((20000 + (h % 400) * 20)); }

munge_dir() {
  # A unix socket path must stay under ~100 bytes; fall back to a short /tmp path for deep DIRs.
  if ((${#DIR} < 70)); then echo "$DIR/munge"; else
    echo "/tmp/gridrun-munge-$(printf '%s' "$DIR" | cksum | cut -d' ' -f1)"; fi
}

install_if_missing() {
  local missing=()
  for p in slurm-wlm munge; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  [[ $(id -u) -eq 0 ]] || die "need root to install ${missing[*]} (or run scripts/install-deps.sh --test)"
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

pid_alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Polls `cond` (a function) every 0.2 s until it succeeds or `secs` pass.
wait_for() {
  local secs="$1" what="$2"; shift 2
  local deadline=$((SECONDS + secs))
  until "$@"; do
    ((SECONDS < deadline)) || { echo "local-cluster: no $what after ${secs}s" >&2; return 1; }
    sleep 0.2
  done
}

node_idle() { [[ "$(SLURM_CONF="$CONF" sinfo -h -n "$HOST" -o %t 2>/dev/null)" == "idle" ]]; }
munge_up() { [[ -S "$(munge_dir)/munge.socket.2" ]] && munge -S "$(munge_dir)/munge.socket.2" -n </dev/null >/dev/null 2>&1; }
ctld_up() { SLURM_CONF="$CONF" scontrol ping 2>/dev/null | grep -q UP; }

write_config() {
  local pb node gpus=4 md
  pb=$(port_base); md=$(munge_dir)
  # The node line as slurmd itself detects it (sockets/cores/threads/memory), so it never drains
  # the node for a topology mismatch; the GPUs are ours.
  node=$(slurmd -C | head -1)
  mkdir -p "$DIR/dev" "$DIR/state" "$DIR/spool" "$DIR/log"
  for i in $(seq 0 $((gpus - 1))); do
    [[ -e "$DIR/dev/gpu$i" ]] || mknod "$DIR/dev/gpu$i" c 1 3
  done
  cat >"$CONF" <<EOF
# Written by tests/slurm/local-cluster.sh: a private single-node test cluster.
ClusterName=gridrun-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$pb
SlurmdPort=$((pb + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$md/munge.socket.2,cred_expire=5
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
GresTypes=gpu
MpiDefault=none
ReturnToService=2
JobRequeue=1
MinJobAge=3600
KillWait=5
MaxArraySize=1001
InactiveLimit=0
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
$node NodeAddr=127.0.0.1 Gres=gpu:$gpus State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$DIR/gres.conf" <<EOF
NodeName=$HOST Name=gpu File=$DIR/dev/gpu[0-$((gpus - 1))]
EOF
}

start_munge() {
  local md; md=$(munge_dir)
  if munge_up; then return 0; fi
  mkdir -p "$md"
  [[ -f "$md/munge.key" ]] || dd if=/dev/urandom of="$md/munge.key" bs=1024 count=1 status=none
  chown -R munge:munge "$md"
  chmod 0755 "$md"; chmod 0400 "$md/munge.key"
  chmod 0755 "$DIR"
  runuser -u munge -- munged --socket="$md/munge.socket.2" --key-file="$md/munge.key" \
    --pid-file="$md/munged.pid" --log-file="$md/munged.log" --seed-file="$md/munged.seed"
  wait_for 15 munged munge_up || die "munged did not come up (log: $md/munged.log)"
}

start() {
  install_if_missing
  [[ $(id -u) -eq 0 ]] || die "the test cluster runs its daemons as root (SlurmUser=root)"
  mkdir -p "$DIR"
  if [[ -f "$CONF" ]] && ctld_up && node_idle; then log "already running in $DIR"; return 0; fi
  write_config
  start_munge
  pid_alive "$DIR/slurmctld.pid" || slurmctld -f "$CONF" -i
  wait_for 30 slurmctld ctld_up || { tail -20 "$DIR/log/slurmctld.log" >&2; die "slurmctld did not answer"; }
  pid_alive "$DIR/slurmd.pid" || slurmd -f "$CONF"
  if ! wait_for "$WAIT_S" "idle node" node_idle; then
    tail -20 "$DIR/log/slurmd.log" >&2 || true
    SLURM_CONF="$CONF" sinfo -R >&2 || true
    die "node $HOST did not become idle within ${WAIT_S}s"
  fi
  log "up: node $HOST idle ($(SLURM_CONF="$CONF" sinfo -h -o '%c CPUs, %G')); export SLURM_CONF=$CONF"
}

stop_pid() {
  local f="$1" deadline
  pid_alive "$f" || return 0
  local pid; pid=$(cat "$f")
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$((SECONDS + 15))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
}

queue_empty() { [[ -z "$(SLURM_CONF="$CONF" squeue -h -o %i 2>/dev/null)" ]]; }

stop() {
  [[ -d "$DIR" ]] || { log "nothing to stop in $DIR"; return 0; }
  if [[ -f "$CONF" ]] && ctld_up; then
    # Cancel what is left and let slurmd end the job steps before the daemons go.
    SLURM_CONF="$CONF" scancel --user="$(id -un)" 2>/dev/null || true
    wait_for 30 "empty queue" queue_empty || log "jobs still listed after 30 s; stopping anyway"
  fi
  stop_pid "$DIR/slurmd.pid"
  stop_pid "$DIR/slurmctld.pid"
  stop_pid "$(munge_dir)/munged.pid"
  rm -rf "$(munge_dir)" "$DIR"
  log "stopped and removed $DIR"
}

status() {
  [[ -f "$CONF" ]] || { echo "local-cluster: no cluster in $DIR"; exit 1; }
  ctld_up || { echo "local-cluster: slurmctld in $DIR is down"; exit 1; }
  SLURM_CONF="$CONF" sinfo
  SLURM_CONF="$CONF" squeue
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) echo "usage: $0 start|stop|status|env [STATE_DIR]" >&2; exit 2 ;;
esac
