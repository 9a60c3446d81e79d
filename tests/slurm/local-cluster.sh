#!/usr/bin/env bash
# A private Slurm cluster for gridrun's tests: real munged, slurmctld and slurmd (Debian 12's
# slurm-wlm 22.05), started directly (no systemd), everything under one state dir. One node on
# loopback by default; with --nodes N, N hosts, each its own network + UTS namespace (issue 23).
#
#   tests/slurm/local-cluster.sh start [--nodes N] [DIR]  install if missing, configure, start,
#                                                        wait until every node is idle
#   tests/slurm/local-cluster.sh stop   [DIR]   stop everything started from DIR and delete DIR
#                                               (namespaces, links and the bridge included)
#   tests/slurm/local-cluster.sh clear  [DIR]   cancels every job of that cluster and waits (60 s
#                                               at most) until squeue lists none; exit 1 if not
#   tests/slurm/local-cluster.sh status [DIR]   sinfo/squeue of that cluster; exit 1 if it is down
#   tests/slurm/local-cluster.sh env    [DIR]   prints `export SLURM_CONF=...` for a shell to eval
#   tests/slurm/local-cluster.sh hosts  [DIR]   one line per host: node name, namespace, address
#   tests/slurm/local-cluster.sh crash NODE [DIR]   the host dies: SIGKILL to every process in it
#   tests/slurm/local-cluster.sh revive NODE [DIR]  its slurmd starts again; waits until the node
#                                                   is back in service (ReturnToService=2)
#   tests/slurm/local-cluster.sh leftovers [DIR]    after stop: lists any namespace, link, mount
#                                                   or process of this cluster still there; exit 1
#                                                   if there is one (the multi-host fixture's check)
#   tests/slurm/local-cluster.sh ports  [DIR]   prints the SlurmctldPort a start would take now
#                                               (SlurmdPort is the next); exit 1 if none is free
#
# DIR defaults to /tmp/gridrun-slurm-<uid>. Clients find the cluster through SLURM_CONF=DIR/slurm.conf,
# so the machine's own /etc/slurm (if any) is never touched. Ports are derived from DIR, so two build
# trees can each run their own cluster, and checked: a pair that another program holds is skipped
# for the next free one (issue 49). Why these settings (found on Debian 12 in a container):
#   - munged must run as user munge on a socket dir it owns; we run a private munged + key.
#   - GRES gpu needs File= devices or slurmd reports a lower count than configured: four char
#     devices (mknod c 1 3, i.e. /dev/null's numbers) stand in; Slurm then sets CUDA_VISIBLE_DEVICES.
#   - proctrack/linuxproc + task/none work without cgroups; SlurmUser=root.
#   - Every node is 2 cores x 1 thread (SlurmdParameters=config_overrides), not what slurmd -C
#     detects: the scenarios' placements must not depend on the machine (write_config says why).
#   - AuthInfo cred_expire decides how long a requeued job waits before it may start again (default
#     120 s): 5 s keeps the requeue test quick. KillWait 5 s for the same reason.
#   - Addresses are 127.0.0.1, so the host name need not resolve (containers often lack it).
#   - No slurmdbd: accounting is off, so `gridrun status` must work from squeue/scontrol + disk.
#     MinJobAge 3600 s keeps ended jobs (state, Restarts) in scontrol for the scenarios' asserts
#     however long the rest of a scenario takes on a loaded machine (300 s is Slurm's default).
# With --nodes N (found while building issue 23's cluster; each one a pitfall somebody hit):
#   - Hosts are network namespaces joined by veth pairs to a bridge that exists only for this
#     cluster, addressed from 198.18.0.0/15 (reserved for benchmarking, never routed): the bridge
#     (slurmctld's side, in the root namespace) is .1, host k is .(10+k) of a /24 chosen from DIR.
#     The interface inside a host is eth0: Open MPI's oob and PMIx skip interfaces named vir*.
#   - Each host also has its own UTS namespace (its own hostname = its Slurm node name), kept as a
#     bind-mounted nsfs file. Processes enter with `nsenter --net --uts`, not `ip netns exec`,
#     which remounts /sys (hiding /sys/fs/cgroup, which slurmd 22.05 initialises at every start).
#   - One slurmd per host (`slurmd -N NODE`); what Slurm keeps per daemon gets %n: spool, pid and
#     log files, and TmpFS (the PMIx plugin names its directories without the node, so two hosts'
#     steps collide in a shared /tmp).
#   - SlurmdTimeout=10: a dead host is DOWN within seconds, its batch jobs go NODE_FAIL and are
#     requeued (JobRequeue=1) with SLURM_RESTART_COUNT + 1; ReturnToService=2 takes a revived
#     host back without an admin. `crash` kills every process of the host (slurmd alone would leave
#     slurmstepd and the ranks running and writing).
#   - The hosts differ as a real cluster's do: all but the last have 4 fake GPUs, the last none.
set -euo pipefail

cmd="${1:-}"
shift || true
NODES=1
NODE_ARG=""
case "$cmd" in
  start)
    if [[ ${1:-} == --nodes ]]; then
      NODES=${2:?--nodes needs a count}
      shift 2
    fi
    [[ $NODES =~ ^[1-9][0-9]?$ ]] || { echo "local-cluster: --nodes must be 1-99, not '$NODES'" >&2; exit 2; }
    ;;
  crash | revive) NODE_ARG=${1:?usage: $0 $cmd NODE [DIR]}; shift ;;
esac
DIR="${1:-/tmp/gridrun-slurm-$(id -u)}"
DIR="$(realpath -m "$DIR")"
CONF="$DIR/slurm.conf"
HOST="$(hostname -s)"
WAIT_S=90

die() { echo "local-cluster: $*" >&2; exit 1; }
log() { echo "local-cluster: $*"; }

# Ports from a checksum of DIR: stable per dir, different between build trees.
port_base() { local h; h=$(printf '%s' "$DIR" | cksum | cut -d' ' -f1); echo $((20000 + (h % 400) * 20)); }

# Is TCP port $1 taken in this network namespace (the root one, where slurmctld and a single-node
# slurmd listen)? Read from /proc/net/tcp and tcp6, which list every socket of the namespace: no
# tool needed and no packet sent. TIME_WAIT (state 06) does not count: Slurm binds with
# SO_REUSEADDR, so a cluster restarted on the same DIR keeps its ports.
port_busy() {
  local hex
  hex=$(printf ':%04X' "$1")
  awk -v h="$hex" 'FNR > 1 && substr($2, length($2) - 4) == h && $4 != "06" {busy = 1} END {exit !busy}' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# SlurmctldPort (SlurmdPort is the next one): the checksum's pair if both are free, else the next
# free pair, up to 200 pairs on (wrapping within 20000-27999, below Linux's ephemeral ports).
pick_ports() {
  local first i p
  first=$(port_base)
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + (first - 20000 + 2 * i) % 8000))
    if ! port_busy "$p" && ! port_busy $((p + 1)); then
      ((i == 0)) || echo "local-cluster: port $first or $((first + 1)) is taken; using $p and $((p + 1))" >&2
      echo "$p"
      return 0
    fi
  done
  die "no two free TCP ports among the 200 pairs from $first on (20000-27999, see ss -ltn)"
}

# Multi-host names, also from DIR: two build trees get different namespaces, bridge and subnet.
TAG=$(($(printf '%s' "$DIR" | cksum | cut -d' ' -f1) % 250 + 1))
NET="198.18.$TAG"                # the cluster's /24; .1 is the bridge, host k is .(10+k)
BRIDGE="grb$TAG"                 # interface names stay under Linux's 15 characters
UTS_DIR="/run/gridrun-cluster-$TAG"
HOSTS_FILE="$DIR/hosts"          # written at start: NODE NAMESPACE ADDRESS GPUS, one line per host
multi() { [[ -f $HOSTS_FILE ]] && [[ $(awk '$2 != "-"' "$HOSTS_FILE" | wc -l) -gt 0 ]]; }
host_ns() { awk -v n="$1" '$1 == n {print $2}' "$HOSTS_FILE"; }
# Runs a command inside host NODE (its network and UTS namespaces).
in_host() {
  local node=$1
  shift
  nsenter --net="/run/netns/$(host_ns "$node")" --uts="$UTS_DIR/uts-$node" "$@"
}

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
    ((SECONDS < deadline)) || { echo "local-cluster: timed out after ${secs}s waiting for $what" >&2; return 1; }
    sleep 0.2
  done
}

node_idle() { [[ "$(SLURM_CONF="$CONF" sinfo -h -n "$HOST" -o %t 2>/dev/null)" == "idle" ]]; }
all_idle() { [[ "$(SLURM_CONF="$CONF" sinfo -h -N -o %t 2>/dev/null | sort -u)" == idle ]]; }
node_in_service() {  # idle, or running jobs: not down, drained or unknown
  [[ "$(SLURM_CONF="$CONF" sinfo -h -n "$1" -o %t 2>/dev/null)" =~ ^(idle|mix|mixed|alloc|allocated)$ ]]
}
munge_up() { [[ -S "$(munge_dir)/munge.socket.2" ]] && munge -S "$(munge_dir)/munge.socket.2" -n </dev/null >/dev/null 2>&1; }
ctld_up() { SLURM_CONF="$CONF" scontrol ping 2>/dev/null | grep -q UP; }

write_config() {
  local pb node gpus=4 md
  if [[ -f $CONF ]] && { pid_alive "$DIR/slurmctld.pid" || pid_alive "$DIR/slurmd.pid"; }; then
    # Our own daemons of an earlier start still hold the ports: keep them.
    pb=$(awk -F= '$1 == "SlurmctldPort" {print $2}' "$CONF")
  else
    pb=$(pick_ports)
  fi
  md=$(munge_dir)
  # Every node (each host of --nodes N too) has 2 cores of 1 thread, whatever this machine has:
  # with CR_Core a job takes whole cores, so on a machine of 1 core x 2 threads a node would hold
  # one 1-rank job, not two, and the scenarios' placements (two jobs sharing a host, a 2-rank job on
  # one host) would depend on the machine (reproduced by declaring that topology). config_overrides keeps
  # slurmd from draining a node that differs from what it detects. Memory as slurmd detects it;
  # the GPUs are ours.
  local mem
  mem=$(slurmd -C 2>/dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -1 || true)
  node="NodeName=$HOST CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=${mem:-1024}"
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
SlurmdParameters=config_overrides
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
  if multi; then write_multi_config "$node"; fi
}

# The --nodes N variant of the file written above: the controller on the bridge, one node line
# per host, and per-daemon paths (%n = the node name).
write_multi_config() {
  local line=$1 name addr g
  sed -i -e "s|^SlurmctldHost=.*|SlurmctldHost=$HOST($NET.1)|" \
    -e "s|^SlurmdSpoolDir=.*|SlurmdSpoolDir=$DIR/spool-%n|" \
    -e "s|^SlurmdPidFile=.*|SlurmdPidFile=$DIR/slurmd-%n.pid|" \
    -e "s|^SlurmdLogFile=.*|SlurmdLogFile=$DIR/log/slurmd-%n.log\nTmpFS=$DIR/tmp-%n\nSlurmdTimeout=10|" \
    -e "s|^# Written by .*|# Written by tests/slurm/local-cluster.sh: a private multi-host test cluster.|" \
    -e '/^NodeName=/d' -e '/^PartitionName=/d' "$CONF"
  : >"$DIR/gres.conf"
  while read -r name _ addr g; do
    mkdir -p "$DIR/spool-$name" "$DIR/tmp-$name"
    local gres=""
    ((g > 0)) && gres=" Gres=gpu:$g"
    echo "NodeName=$name ${line#NodeName=* } NodeAddr=$addr$gres State=UNKNOWN" >>"$CONF"
    if ((g > 0)); then echo "NodeName=$name Name=gpu File=$DIR/dev/gpu[0-$((g - 1))]" >>"$DIR/gres.conf"; fi
  done <"$HOSTS_FILE"
  echo "PartitionName=debug Nodes=$(awk '{print $1}' "$HOSTS_FILE" | paste -sd,) Default=YES MaxTime=INFINITE State=UP" >>"$CONF"
}

# Hosts for --nodes N: a bridge in the root namespace (slurmctld's side), and per host a network
# namespace with one end of a veth pair (eth0) on the bridge, plus a UTS namespace named after it.
make_hosts() {
  local k name ns addr
  remove_hosts  # what a killed earlier run of this DIR may have left
  : >"$HOSTS_FILE"
  for k in $(seq 1 "$NODES"); do
    # All hosts but the last have 4 fake GPUs: GPU-shaped work must go to those only.
    echo "host$k gr${TAG}h$k $NET.$((10 + k)) $((k < NODES ? 4 : 0))" >>"$HOSTS_FILE"
  done
  ip link add "$BRIDGE" type bridge
  ip addr add "$NET.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  mkdir -p "$UTS_DIR"
  while read -r name ns addr _; do
    k=${name#host}
    ip netns add "$ns"
    ip link add "${BRIDGE}v$k" type veth peer name eth0 netns "$ns"
    ip link set "${BRIDGE}v$k" master "$BRIDGE" up
    ip -n "$ns" addr add "$addr/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    touch "$UTS_DIR/uts-$name"
    unshare --uts="$UTS_DIR/uts-$name" hostname "$name"
  done <"$HOSTS_FILE"
}

# Kills every process of host NODE (all of its network namespace), until none is left.
kill_host() {
  local ns pids tries=0
  ns=$(host_ns "$1")
  while pids=$(ip netns pids "$ns" 2>/dev/null) && [[ -n $pids ]]; do
    # shellcheck disable=SC2086  # one PID per word
    kill -KILL $pids 2>/dev/null || true
    ((++tries < 100)) || { log "processes left in $ns: $pids"; return 1; }
    sleep 0.1
  done
}

remove_hosts() {
  local name ns
  [[ -f $HOSTS_FILE ]] || return 0
  while read -r name ns _; do
    [[ $ns == - ]] && continue
    if ip netns list | grep -qw "$ns"; then
      kill_host "$name" || true
      ip netns del "$ns"
    fi
    if [[ -e $UTS_DIR/uts-$name ]]; then
      umount "$UTS_DIR/uts-$name" 2>/dev/null || true
      rm -f "$UTS_DIR/uts-$name"
    fi
  done <"$HOSTS_FILE"
  if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link del "$BRIDGE"; fi
  if [[ -d $UTS_DIR ]]; then rmdir "$UTS_DIR" 2>/dev/null || true; fi
}

start_slurmd() {  # NODE
  rm -f "$DIR/slurmd-$1.pid"
  in_host "$1" slurmd -f "$CONF" -N "$1"
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
  if [[ -f "$CONF" ]] && ctld_up && all_idle; then log "already running in $DIR"; return 0; fi
  if ((NODES > 1)); then
    make_hosts
  else
    echo "$HOST - 127.0.0.1 4" >"$HOSTS_FILE"
  fi
  write_config
  start_munge
  pid_alive "$DIR/slurmctld.pid" || slurmctld -f "$CONF" -i
  wait_for 30 slurmctld ctld_up || { tail -20 "$DIR/log/slurmctld.log" >&2; die "slurmctld did not answer"; }
  if multi; then
    local name
    while read -r name _; do start_slurmd "$name"; done <"$HOSTS_FILE"
    if ! wait_for "$WAIT_S" "idle hosts" all_idle; then
      tail -5 "$DIR"/log/slurmd-*.log >&2 || true
      SLURM_CONF="$CONF" sinfo -N >&2 || true
      die "the $NODES hosts did not all become idle within ${WAIT_S}s"
    fi
    log "up: $NODES hosts idle on $NET.0/24 ($(SLURM_CONF="$CONF" sinfo -h -N -o '%N:%G' | paste -sd' ')); export SLURM_CONF=$CONF"
    return 0
  fi
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
clear_jobs() {  # SECONDS: cancels every job of the cluster and waits until squeue lists none
  SLURM_CONF="$CONF" scancel --user="$(id -un)" 2>/dev/null || true
  wait_for "$1" "an empty queue" queue_empty
}

# After a failed scenario: nothing of it left queued or running (tests/slurm/lib.sh).
clear_cluster() {
  { [[ -f "$CONF" ]] && ctld_up; } || die "no cluster answers in $DIR"
  clear_jobs 60
}

stop() {
  [[ -d "$DIR" ]] || { log "nothing to stop in $DIR"; return 0; }
  # Cancel what is left and let slurmd end the job steps before the daemons go.
  if [[ -f "$CONF" ]] && ctld_up; then clear_jobs 30 || log "stopping anyway"; fi
  stop_pid "$DIR/slurmd.pid"
  local f
  for f in "$DIR"/slurmd-*.pid; do if [[ -e $f ]]; then stop_pid "$f"; fi; done
  remove_hosts
  stop_pid "$DIR/slurmctld.pid"
  stop_pid "$(munge_dir)/munged.pid"
  rm -rf "$(munge_dir)" "$DIR"
  log "stopped and removed $DIR"
}

# Names are derived from DIR (TAG above), so they can be checked after DIR is gone.
leftovers() {
  local found=0 line
  while read -r line; do
    [[ -n $line ]] || continue
    echo "local-cluster: left over: namespace $line"
    found=1
  done < <(ip netns list | awk -v p="gr${TAG}h" 'index($1, p) == 1 {print $1}')
  while read -r line; do
    [[ -n $line ]] || continue
    echo "local-cluster: left over: link $line"
    found=1
  done < <(ip -o link show | awk -F': ' -v p="$BRIDGE" 'index($2, p) == 1 {print $2}')
  if [[ -e $UTS_DIR ]]; then
    echo "local-cluster: left over: $UTS_DIR"
    found=1
  fi
  while read -r line; do
    [[ -n $line ]] || continue
    echo "local-cluster: left over: process $line"
    found=1
  done < <(pgrep -af -- "$DIR" | grep -v -e "local-cluster.sh" || true)
  if ((found)); then return 1; fi
  log "nothing of the cluster in $DIR is left (namespaces gr${TAG}h*, links $BRIDGE*, processes)"
}

status() {
  [[ -f "$CONF" ]] || { echo "local-cluster: no cluster in $DIR"; exit 1; }
  ctld_up || { echo "local-cluster: slurmctld in $DIR is down"; exit 1; }
  SLURM_CONF="$CONF" sinfo
  SLURM_CONF="$CONF" squeue
}

hosts() {
  [[ -f $HOSTS_FILE ]] || die "no cluster in $DIR"
  awk '{print $1, $2, $3}' "$HOSTS_FILE"
}

crash() {
  multi || die "crash needs a cluster started with --nodes N (N > 1)"
  [[ -n $(host_ns "$NODE_ARG") ]] || die "no host $NODE_ARG in $DIR (see: $0 hosts $DIR)"
  kill_host "$NODE_ARG"
  log "host $NODE_ARG crashed: every process in $(host_ns "$NODE_ARG") killed"
}

revive() {
  multi || die "revive needs a cluster started with --nodes N (N > 1)"
  [[ -n $(host_ns "$NODE_ARG") ]] || die "no host $NODE_ARG in $DIR (see: $0 hosts $DIR)"
  start_slurmd "$NODE_ARG"
  wait_for "$WAIT_S" "$NODE_ARG back in service" node_in_service "$NODE_ARG" ||
    die "$NODE_ARG did not return to service within ${WAIT_S}s"
  log "host $NODE_ARG is back: $(SLURM_CONF="$CONF" sinfo -h -n "$NODE_ARG" -o %t)"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  hosts) hosts ;;
  crash) crash ;;
  revive) revive ;;
  leftovers) leftovers ;;
  clear) clear_cluster ;;
  ports) pick_ports ;;
  *) echo "usage: $0 start [--nodes N]|stop|clear|status|env|hosts|crash NODE|revive NODE|leftovers|ports [STATE_DIR]" >&2; exit 2 ;;
esac
