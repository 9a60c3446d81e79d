#!/usr/bin/env bash
# Real Slurm on 3 hosts, real gridrun-train: a compare-by run cancelled in its second phase and
# submitted again is not a measurement for that phase.
#  8. A grid compare by nodes (nodes=2 first, two 2-host jobs; then nodes=1) is submitted; once a
#     nodes=1 job has started (its results file exists), `gridrun cancel` stops the run and
#     `gridrun submit` submits what is left (a second sitting: `submit-2`). The first phase ran in
#     one sitting and keeps its makespan; the second has jobs (or attempts) in two sittings, so the
#     report's phase table says "not measured" for nodes=1 and the verdict names the phase, the
#     reason and the command that measures it again (`gridrun submit ... --slurm --rerun phase=1`).
#     That command then measures the phase again, from scratch, in one sitting.
#   scenario_hosts_sittings.sh BIN_DIR WORK_DIR PYTHON
source "$(dirname "$0")/lib.sh"
BIN=$1 WORK=$2 PY=$3
require_cluster
require_train "$BIN/gridrun-train"
rm -rf "$WORK" && mkdir -p "$WORK"

# nodes=1: two 1-rank jobs long enough (60 epochs) that the cancel comes while they run.
cat >"$WORK/grid.yaml" <<'YAML'
name: hosts-sittings
compare: {by: nodes}
defaults: {dataset: synthetic, model: mlp, device: cpu, threads_per_rank: 1, train_samples: 1024,
           test_samples: 128, global_batch: 32, optimizer: sgd, lr: 0.05}
grid:
  seed: [0, 1]
zip:
  ranks: [2, 1]
  nodes: [2, 1]
  epochs: [2, 60]
YAML
RUNS="$WORK/runs"
RUN="$RUNS/hosts-sittings"
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$RUNS" --time 10 --network eth0
phase1_started() {
  local f
  for f in "$RUN"/results/*.h5*; do
    [[ -e $f ]] || continue
    "$PY" -c 'import h5py,sys; f=h5py.File(sys.argv[1],"r",swmr=True) if sys.argv[1].endswith("partial") else h5py.File(sys.argv[1],"r"); sys.exit(0 if str(f.attrs["meta.phase"])=="1" else 1)' "$f" 2>/dev/null && return 0
  done
  return 1
}
WAIT_POLL_S=0.2 wait_until 300 "a nodes=1 job to start" phase1_started
note "a nodes=1 job is running: cancel the run, submit it again"
"$BIN/gridrun" cancel "$RUN" --wait 120
"$BIN/gridrun" submit "$WORK/grid.yaml" --slurm --out "$RUNS" --time 10 --network eth0
wait_until 480 "the second submission to finish" run_drained "$RUN"
"$BIN/gridrun" report "$RUN" --format json >"$WORK/report.json"
"$BIN/gridrun" report "$RUN" | sed -n '1,/^$/p'
"$PY" - "$WORK/report.json" <<'PYEOF'
import json, sys
tables = json.load(open(sys.argv[1]))["tables"]
(phases,) = [t for t in tables if t["title"].startswith("Phases (")]
rows = {r["phase"]: r for r in phases["rows"]}
assert sorted(rows) == ["nodes=1", "nodes=2"], rows
assert rows["nodes=2"]["ran"] != "not measured" and rows["nodes=2"]["makespan_s"] > 0, rows["nodes=2"]
assert rows["nodes=1"]["ran"] == "not measured" and rows["nodes=1"]["makespan_s"] is None, rows["nodes=1"]
verdict = [r["verdict"] for t in tables if t["title"] == "Verdict" for r in t["rows"]]
assert any("No verdict for nodes=1" in v and "sittings" in v and "gridrun submit" in v and "--rerun phase=1" in v
           for v in verdict), verdict
print("nodes=2 measured in one sitting; nodes=1 not measured:", verdict[0])
PYEOF
note "the advised command measures nodes=1 again in one sitting"
"$BIN/gridrun" submit "$RUN/grid.yaml" --slurm --out "$RUNS" --time 10 --network eth0 --rerun phase=1 |
  tee "$WORK/rerun.txt"
grep -q "2 job(s) submitted" "$WORK/rerun.txt" || fail "--rerun phase=1 did not submit the phase's 2 jobs"
wait_until 480 "the rerun to finish" run_drained "$RUN"
"$BIN/gridrun" report "$RUN" --format json >"$WORK/report2.json"
"$PY" - "$WORK/report2.json" <<'PYEOF'
import json, sys
tables = json.load(open(sys.argv[1]))["tables"]
(phases,) = [t for t in tables if t["title"].startswith("Phases (")]
rows = {r["phase"]: r for r in phases["rows"]}
assert rows["nodes=1"]["ran"] != "not measured" and rows["nodes=1"]["makespan_s"] > 0, rows["nodes=1"]
verdict = [r["verdict"] for t in tables if t["title"] == "Verdict" for r in t["rows"]]
assert any(" faster" in v for v in verdict), verdict
print("after --rerun phase=1:", verdict[0])
PYEOF
"$BIN/gridrun" submit "$RUN/grid.yaml" --slurm --out "$RUNS" --rerun phase=7 2>"$WORK/bad.txt" && fail "--rerun phase=7 accepted"
grep -q "no phase nodes=7" "$WORK/bad.txt" || fail "--rerun phase=7: $(cat "$WORK/bad.txt")"
echo "PASS"
