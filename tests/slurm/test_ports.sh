#!/usr/bin/env bash
# The test cluster's ports are checked before use (issue 49): `local-cluster.sh ports DIR` prints the
# SlurmctldPort a start would take (SlurmdPort is the next). With another program listening on
# either port of that pair (IPv4 or IPv6 only), it must move to a pair that leaves the taken port
# out, and name the taken port; once the listener is gone, the pair is the checksum's again.
# Needs no Slurm and no root: listeners are python3 sockets on loopback; nothing is sent anywhere.
#
#   tests/slurm/test_ports.sh LOCAL_CLUSTER_SH DIR
set -euo pipefail
CLUSTER=${1:?usage: $0 LOCAL_CLUSTER_SH DIR}
DIR=${2:?usage: $0 LOCAL_CLUSTER_SH DIR}

fail() { echo "FAIL: $*" >&2; exit 1; }

# Listens on ADDRESS:PORT until stdin closes; prints "ready" once the socket listens.
LISTEN_PY='
import socket, sys
fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
print("ready", flush=True)
sys.stdin.read()
'

first=$("$CLUSTER" ports "$DIR")
if ! [[ $first =~ ^[0-9]+$ ]] || ((first < 20000 || first + 1 > 27999)); then
  fail "ports printed '$first'"
fi
echo "free pair for $DIR: $first, $((first + 1))"

# One case: a listener on ADDRESS:PORT, then the pair must avoid PORT.
check_moves() {
  local addr=$1 port=$2 got err ready wfd
  coproc LISTENER { exec python3 -c "$LISTEN_PY" "$addr" "$port"; }
  read -r ready <&"${LISTENER[0]}" || true
  [[ $ready == ready ]] || fail "could not listen on [$addr]:$port (taken by someone else?)"
  err=$(mktemp)
  got=$("$CLUSTER" ports "$DIR" 2>"$err") || { cat "$err" >&2; fail "ports exited non-zero with $port taken"; }
  wfd=${LISTENER[1]}
  exec {wfd}>&-  # its stdin closes: the listener ends
  wait "$LISTENER_PID" || true
  ((got != port && got + 1 != port)) || fail "[$addr]:$port is taken, but ports still gave $got"
  grep -q "port $first or $((first + 1)) is taken; using $got" "$err" || { cat "$err" >&2; fail "no note naming the taken pair"; }
  rm -f "$err"
  echo "ok: [$addr]:$port taken -> $got, $((got + 1))"
}

check_moves 127.0.0.1 "$first"            # SlurmctldPort's
check_moves 127.0.0.1 $((first + 1))      # SlurmdPort's
if python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
  check_moves ::1 "$first"                # a listener on IPv6 only
else
  echo "note: no IPv6 loopback here; the IPv6 case is left out"
fi

again=$("$CLUSTER" ports "$DIR")
((again == first)) || fail "with the listeners gone, ports gave $again, expected $first again"
echo "ok: listeners gone -> $again again"
