#!/usr/bin/env bash
# Real Slurm on 3 hosts, a user's own program as the job (issue 56, docs/own-script.md):
# examples/own-script/train_ddp.py (PyTorch DDP over gloo, Fashion-MNIST) submitted through
# `gridrun submit` as a command grid: one 1-rank job, and the same 2-rank job twice, once with its
# ranks on two hosts (nodes: 2, --network eth0) and once on one host. srun starts gridrun-exec on
# each rank; rank 0 publishes its address and a free port in the run folder and the other rank
# meets it there (torch.distributed's env:// rendezvous across hosts). Then:
#   - every job completed (gridrun status, the results files' status);
#   - the recorded per-step losses equal the ones the script printed itself;
#   - the 2-host job's losses equal the 1-host job's (same seed, same global batch), step for step;
#   - the 2-host job's results file names two hosts;
#   - `gridrun calibrate --slurm` measures the grid's 3 configurations through Slurm, and simulate
#     predicts from that calibration.
#   scenario_hosts_command.sh BIN_DIR WORK_DIR PYTHON
source "$(dirname "$0")/lib.sh"
BIN=$1 WORK=$2 PY=$3
HERE=$(cd "$(dirname "$0")" && pwd)
EXAMPLES=$(cd "$HERE/../../examples" && pwd)
require_cluster
[[ -x "$BIN/gridrun-exec" ]] || fail "$BIN/gridrun-exec not built"
[[ $(sinfo -h -N -o %N | sort -u | wc -l) -eq 3 ]] || fail "expected the 3-host cluster"
rm -rf "$WORK" && mkdir -p "$WORK"
cp -r "$EXAMPLES/own-script" "$WORK/own-script"
# The example's command without its env: (gloo on loopback, for one machine): here the interfaces
# come from --network, as on a real cluster.
cat >"$WORK/own-script/hosts.yaml" <<'YAML'
name: hosts-command
command: [/usr/bin/python3, train_ddp.py, --device, "{device}", --seed, "{seed}", --lr, "{lr}",
          --batch-size, "{batch_per_rank}", --epochs, "{epochs}", --max-steps, "{max_steps}",
          --train-samples, "{train_samples}", --test-samples, "{test_samples}"]
defaults: {device: cpu, threads_per_rank: 1, global_batch: 64, lr: 0.05, epochs: 1, max_steps: 20,
           train_samples: 1280, test_samples: 200, seed: 7}
grid:
  ranks: [2]
  nodes: [2, 1]
include:
  - {ranks: 1, nodes: 1}
YAML
RUNS="$WORK/runs"
note "submit the command grid (3 jobs) with --network eth0"
"$BIN/gridrun" plan "$WORK/own-script/hosts.yaml"
"$BIN/gridrun" submit "$WORK/own-script/hosts.yaml" --slurm --out "$RUNS" --time 10 --network eth0
wait_until 420 "the command jobs to finish" run_drained "$RUNS/hosts-command"
"$BIN/gridrun" status "$RUNS/hosts-command"
"$BIN/gridrun" status "$RUNS/hosts-command" --format json >"$WORK/status.json"

"$PY" - "$RUNS/hosts-command" "$WORK/status.json" <<'PYEOF'
import json, os, re, sys
import h5py
run_dir, status = sys.argv[1:3]
rows = {r["id"]: r for r in json.load(open(status))["jobs"]}
assert len(rows) == 3, rows
STEP = re.compile(r"^step (\d+) loss (-?[0-9.]+)$", re.M)
losses, hosts = {}, {}
for jid, row in rows.items():
    assert row["state"] == "completed", row
    params = json.load(open(os.path.join(run_dir, "jobs", jid + ".json")))["params"]
    assert params["model"] == "command", params
    with h5py.File(os.path.join(run_dir, "results", jid + ".h5"), "r") as f:
        assert f.attrs["status"] in (b"completed", "completed"), f.attrs["status"]
        n = int(f["steps/rows"][0])
        loss = [float(x) for x in f["steps/loss"][:n]]
        step = [int(x) for x in f["steps/step"][:n]]
        named = f["attempts/hostnames"].asstr()[:][-1]
    printed = [(int(s), v) for s, v in STEP.findall(open(os.path.join(run_dir, "logs", jid + ".out")).read())]
    assert len(printed) == params["max_steps"] == n, (jid, len(printed), n)
    assert [s for s, _ in printed] == step, (jid, printed, step)
    assert ["%.8f" % x for x in loss] == [v for _, v in printed], (jid, loss, printed)
    losses[(params["ranks"], params["nodes"])] = loss
    hosts[(params["ranks"], params["nodes"])] = named
assert set(losses) == {(1, 1), (2, 1), (2, 2)}, losses
assert losses[(2, 2)] == losses[(2, 1)], ("2 hosts vs 1 host", losses[(2, 2)], losses[(2, 1)])
assert len(set(hosts[(2, 2)].split(","))) == 2, hosts
print("3 command jobs completed through Slurm; recorded losses = printed; the 2-host job (%s) "
      "equals the 1-host job for all %d steps" % (hosts[(2, 2)], len(losses[(2, 2)])))
PYEOF
# calibrate --slurm of the same command grid (each configuration alone through sbatch/srun, a
# few steps under GRIDRUN_MAX_STEPS), then simulate predicts from the calibration, not the cost model.
note "calibrate the command grid through Slurm"
"$BIN/gridrun" calibrate "$WORK/own-script/hosts.yaml" --slurm --network eth0 --steps 5 --out "$WORK/cal" |
  tee "$WORK/calibrate.txt"
grep -q "3 configuration(s) of 3 jobs" "$WORK/calibrate.txt" || fail "calibrate --slurm did not measure the 3 configurations"
"$PY" - "$WORK/cal/hosts-command/calibration.json" <<'PYEOF'
import json, sys
configs = json.load(open(sys.argv[1]))["configs"]
assert len(configs) == 3, configs
for key, c in configs.items():
    assert c["step_s"] > 0 and c["steps_per_epoch"] == 20, (key, c)  # 1280 samples / 64 per step
print("calibrate --slurm: 3 command configurations measured:",
      ", ".join("%s %.3f s/step" % (k, c["step_s"]) for k, c in sorted(configs.items())))
PYEOF
cat >"$WORK/cluster.yaml" <<'YAML'
nodes:
  - {name: host1, cores: 2}
  - {name: host2, cores: 2}
  - {name: host3, cores: 2}
YAML
"$BIN/gridrun" simulate "$WORK/own-script/hosts.yaml" --cluster "$WORK/cluster.yaml" --out "$WORK/cal" \
  --format json >"$WORK/predicted.json"
"$PY" - "$WORK/predicted.json" <<'PYEOF'
import json, sys
pred = json.load(open(sys.argv[1]))
assert pred["durations"].startswith("calibration of"), pred["durations"]
print("simulate --cluster: durations from the", pred["durations"])
PYEOF
echo "PASS"
