#!/usr/bin/env bash
# Real Slurm on 3 hosts, real gridrun-train: a host dies in the middle of two jobs.
#  4. A 1-rank job runs on host H and has written a checkpoint. H crashes (every process in it is
#     SIGKILLed: slurmd, slurmstepd, the ranks). Slurm marks H down after SlurmdTimeout, ends the
#     job with NODE_FAIL and requeues it (--requeue); it restarts on another host with --resume
#     from that checkpoint and completes. Its per-step losses equal an undisturbed run of the same
#     job (gridrun-train directly, outside Slurm), its result file's /attempts has two rows with
#     H first and the new host second, and `gridrun status` shows restarts 1 and the new node.
#     After `revive` H is idle again.
#  5. At the same time a 2-rank job with nodes: 2 holds one rank on H (both jobs are placed before
#     the crash and the crash picks the host they share): it is requeued as well and completes on
#     the two surviving hosts.
# Both jobs are 40 epochs long and the crash comes right after the first checkpoints appear, so
# both are certainly interrupted; the assertions on /attempts would fail if one were not.
#   scenario_hosts_crash.sh BIN_DIR WORK_DIR PYTHON
source "$(dirname "$0")/lib.sh"
BIN=$1 WORK=$2 PY=$3
HERE=$(cd "$(dirname "$0")" && pwd)
require_cluster
require_train "$BIN/gridrun-train"
rm -rf "$WORK" && mkdir -p "$WORK"
CLUSTER_DIR=$(dirname "$SLURM_CONF")

cat >"$WORK/one.yaml" <<'YAML'
name: crash-one
defaults: {dataset: synthetic, model: mlp, epochs: 40, train_samples: 2048, test_samples: 128,
           batch_per_rank: 16, device: cpu, ranks: 1, seed: 3}
YAML
cat >"$WORK/two.yaml" <<'YAML'
name: crash-two
defaults: {dataset: synthetic, model: mlp, epochs: 40, train_samples: 2048, test_samples: 128,
           global_batch: 32, device: cpu, ranks: 2, nodes: 2, seed: 5}
YAML
RUNS="$WORK/runs"
# The 2-host job first: it takes the two lowest hosts, and the 1-rank job the lowest host with a
# free core, one of those two (first fit; each host has 2 cores).
"$BIN/gridrun" submit "$WORK/two.yaml" --slurm --out "$RUNS" --time 10 --network eth0
"$BIN/gridrun" submit "$WORK/one.yaml" --slurm --out "$RUNS" --time 10
ONE=$(basename "$RUNS"/crash-one/jobs/*.json .json)
TWO=$(basename "$RUNS"/crash-two/jobs/*.json .json)
# A finished checkpoint is ckpt-<step>; ckpt-<step>.tmp is one being written, which a crash leaves
# unusable (the resumed job then starts afresh, with one /attempts row: CI saw exactly that).
has_checkpoint() {
  local d
  for d in "$RUNS/$1/checkpoints/$2"/ckpt-*; do
    [[ "${d##*/}" =~ ^ckpt-[0-9]+$ ]] && return 0
  done
  return 1
}
both_checkpointed() { has_checkpoint crash-one "$ONE" && has_checkpoint crash-two "$TWO"; }
wait_until 180 "both jobs to write a checkpoint" both_checkpointed
array_of() { awk '!/^#/ && $2 == "array" {print $4}' "$RUNS/$1/slurm/submitted.tsv"; }
ID_ONE=$(array_of crash-one) ID_TWO=$(array_of crash-two)
nodes_of() { scontrol show hostnames "$(squeue -h -j "$1" -o %N)"; }
HOST=$(nodes_of "$ID_ONE")
TWO_HOSTS=$(nodes_of "$ID_TWO" | paste -sd, -)
note "1-rank job on $HOST, 2-host job on $TWO_HOSTS"
[[ ",$TWO_HOSTS," == *",$HOST,"* ]] || fail "the jobs share no host ($HOST vs $TWO_HOSTS)"

note "crash $HOST"
"$HERE/local-cluster.sh" crash "$HOST" "$CLUSTER_DIR"
moved_on() {  # ARRAY_ID: running again but not on $HOST, or already done (the files then tell)
  local st nodes
  st=$(squeue -h -j "$1" -o %T)
  [[ -z "$st" ]] && return 0
  [[ "$st" == RUNNING ]] || return 1
  nodes=$(nodes_of "$1" | paste -sd, -)
  [[ ",$nodes," != *",$HOST,"* ]]
}
both_moved_on() { moved_on "$ID_ONE" && moved_on "$ID_TWO"; }
wait_until 240 "Slurm to requeue both jobs away from $HOST" both_moved_on
sinfo -h -n "$HOST" -o %T | grep -q down || fail "$HOST is not down"
wait_until 300 "the 1-rank job to finish" run_drained "$RUNS/crash-one"
wait_until 300 "the 2-host job to finish" run_drained "$RUNS/crash-two"

note "the undisturbed reference run of the 1-rank job"
mpirun --allow-run-as-root -np 1 "$BIN/gridrun-train" --job "$RUNS/crash-one/jobs/$ONE.json" \
  --out "$WORK/reference" --checkpoint-dir "$WORK/reference-ckpt" --quiet

note "status and result files"
"$BIN/gridrun" status "$RUNS/crash-one"
"$BIN/gridrun" status "$RUNS/crash-one" --format json >"$WORK/one.json"
"$BIN/gridrun" status "$RUNS/crash-two" --format json >"$WORK/two.json"
"$PY" - "$WORK" "$RUNS" "$ONE" "$TWO" "$HOST" <<'PYEOF'
import json, os, sys
import h5py, numpy as np
work, runs, one, two, host = sys.argv[1:6]

def attempts(path):
    with h5py.File(path, "r") as f:
        a = {k: (f["attempts"][k].asstr()[:] if f["attempts"][k].dtype.kind == "O" else f["attempts"][k][:])
             for k in f["attempts"]}
        return a, str(f.attrs["status"]), str(f.attrs["hostname"]), f["steps/loss"][:]

# Every column docs/results.md names, one row per attempt, both rows of the same Slurm task.
COLUMNS = {"attempt", "started_at", "hostname", "hostnames", "resumed_from_step", "batch_id",
           "restart_count"}
def same_task_twice(a, what):
    assert COLUMNS <= set(a), f"{what}: /attempts lacks {COLUMNS - set(a)}"
    assert all(len(a[k]) == 2 for k in COLUMNS), {k: len(a[k]) for k in COLUMNS}
    assert list(a["attempt"]) == [1, 2], a["attempt"]
    assert a["batch_id"][0] == a["batch_id"][1] != "", a["batch_id"]
    assert a["started_at"][0] < a["started_at"][1], a["started_at"]  # ISO 8601 UTC sorts as text

a, status, final_host, loss = attempts(os.path.join(runs, "crash-one", "results", one + ".h5"))
same_task_twice(a, "1-rank job")
assert status == "completed", status
assert list(a["hostname"]) == [host, final_host] and final_host != host, (a["hostname"], final_host)
assert list(a["restart_count"]) == [0, 1], a["restart_count"]
assert a["resumed_from_step"][0] == 0 and a["resumed_from_step"][1] > 0, a["resumed_from_step"]
with h5py.File(os.path.join(work, "reference", one + ".h5"), "r") as f:
    ref = f["steps/loss"][:]
assert len(ref) == len(loss), (len(ref), len(loss))
rel = float(np.max(np.abs(loss - ref) / np.maximum(np.abs(ref), 1e-12)))
assert rel <= 1e-6, f"final losses differ from the undisturbed run by {rel:.3g} relative"
(row,) = json.load(open(os.path.join(work, "one.json")))["jobs"]
assert row["state"] == "completed" and row["restarts"] == 1 and row["node"] == final_host, row
assert row["attempt_hosts"] == [host, final_host], row
print(f"4. 1-rank job: {host} -> {final_host}, resumed at step {a['resumed_from_step'][1]}, "
      f"{len(loss)} losses equal to the undisturbed run (max rel {rel:.3g})")

a, status, _, _ = attempts(os.path.join(runs, "crash-two", "results", two + ".h5"))
same_task_twice(a, "2-host job")
assert list(a["restart_count"]) == [0, 1], a["restart_count"]
assert a["resumed_from_step"][1] > 0, a["resumed_from_step"]
assert status == "completed", status
assert len(a["hostnames"]) == 2 and host in a["hostnames"][0].split(","), a["hostnames"]
assert host not in a["hostnames"][1].split(",") and len(a["hostnames"][1].split(",")) == 2, a["hostnames"]
(row,) = json.load(open(os.path.join(work, "two.json")))["jobs"]
assert row["state"] == "completed" and row["restarts"] == 1, row
print(f"5. 2-host job: {a['hostnames'][0]} -> {a['hostnames'][1]}, completed")
PYEOF

note "revive $HOST"
"$HERE/local-cluster.sh" revive "$HOST" "$CLUSTER_DIR"
host_idle() { [[ "$(sinfo -h -n "$HOST" -o %T)" == idle ]]; }
wait_until 120 "$HOST to be idle again" host_idle
echo "PASS"
