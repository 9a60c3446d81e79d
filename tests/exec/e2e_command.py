"""Scenario test of command jobs (issue 56, docs/own-script.md) with the real binaries.

Usage: e2e_command.py GRIDRUN EXAMPLES_DIR TB_PYTHON
`gridrun run` of examples/own-script/compare-cpu.yaml (a user's own PyTorch DDP script on 1 and 2
ranks, two seeds) through real mpirun and the real gridrun-exec, then:
  - every job completed: state.json, the results file's status, /steps/loss;
  - the recorded per-step losses are the ones the script printed itself (`step N loss X`, in the
    job's log), to the printed precision;
  - each 2-rank job's losses equal those of the same script started by hand as 2 processes with
    torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
    MASTER_PORT), same seed: gridrun launches a DDP script exactly as torchrun would;
  - `gridrun status` lists the jobs completed (and, while a job runs, its step), `gridrun report`
    prints the ranks verdict;
  - `gridrun export --format tensorboard` read back by TensorBoard's own EventAccumulator (run by
    TB_PYTHON, the test venv's python, which has the tensorboard package): each job's step/loss
    series equals the losses in its results file;
bad input at plan (an unknown placeholder: exit 2 with file:line:col; a missing script: exit 2
naming it), a program that fails (stderr, exit 1): its job failed with that text as the reason,
one that logs a NaN loss through gridrun_job: diverged, the other jobs of the grid completed;
a program that outlives its `time_limit`: stopped, failed with the limit as the reason; one that
goes past its max_steps: stopped, completed; `gridrun calibrate` + `simulate` of the example.

The example's python is Debian's /usr/bin/python3 (python3-torch); PATH gets /usr/bin first as
well, since the python3 first on a developer's PATH (pyenv) may have no torch.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

import h5py

GRIDRUN, EXAMPLES, TB_PYTHON = sys.argv[1:4]
WORK = tempfile.mkdtemp(prefix="gridrun-e2e-command-")
OUT = os.path.join(WORK, "runs")
SRC = os.path.join(WORK, "own-script")
PY = "/usr/bin/python3"
ENV = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""), PYTHONDONTWRITEBYTECODE="1")
STEP_LINE = re.compile(r"^step (\d+) loss (-?[0-9.]+)$", re.M)


def left_running():
    """Command lines of live processes that name this test's folder (for a post-mortem)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if WORK in cmd:
            found.append("%s %s" % (pid, cmd))
    return found


def gridrun(*args, ok=(0,)):
    try:
        p = subprocess.run([GRIDRUN] + list(args), text=True, capture_output=True, env=ENV, timeout=400)
    except subprocess.TimeoutExpired as e:
        raise AssertionError("gridrun %s: no end after %d s; still running:\n%s\n%s" % (
            " ".join(args), e.timeout, "\n".join(left_running()), e.stdout)) from None
    assert p.returncode in ok, "gridrun %s: exit %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout, p.stderr)
    return p


def state(run_dir):
    with open(os.path.join(run_dir, "state.json")) as f:
        return json.load(f)["jobs"]


def job_params(run_dir, jid):
    with open(os.path.join(run_dir, "jobs", jid + ".json")) as f:
        return json.load(f)["params"]


def text_attr(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def results(run_dir, jid):
    """(status, exit_reason, [(step, loss)], epoch rows) of a job's results file."""
    with h5py.File(os.path.join(run_dir, "results", jid + ".h5"), "r") as f:
        st, why = text_attr(f.attrs["status"]), text_attr(f.attrs.get("exit_reason", ""))
        n = int(f["steps/rows"][0]) if "steps" in f else 0  # rows first: the committed count
        steps = list(zip((int(s) for s in f["steps/step"][:n]), (float(x) for x in f["steps/loss"][:n])))
        m = int(f["epochs/rows"][0]) if "epochs" in f else 0
        epochs = {k: [float(x) for x in f["epochs"][k][:m]] for k in ("epoch", "test_acc")} if m else {}
    return st, why, steps, epochs


def printed_steps(text):
    return [(int(n), s) for n, s in STEP_LINE.findall(text)]


def free_port():
    # Bound and released: the port is free now, and the kernel hands out another for the next ask.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def script_args(p):
    # compare-cpu.yaml's command with the job's values, as gridrun resolves its placeholders.
    return ["--device", p["device"], "--seed", str(p["seed"]), "--lr", repr(float(p["lr"])),
            "--batch-size", str(p["batch_per_rank"]), "--epochs", str(p["epochs"]),
            "--max-steps", str(p["max_steps"]), "--train-samples", str(p["train_samples"]),
            "--test-samples", str(p["test_samples"])]


def by_hand(params, ranks):
    """The example script started as `ranks` processes with torchrun's environment (no gridrun,
    no gridrun_job on PYTHONPATH); rank 0's stdout."""
    port = free_port()
    cwd = tempfile.mkdtemp(prefix="by-hand-", dir=WORK)
    procs = []
    for r in range(ranks):
        env = dict(ENV, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(ranks), LOCAL_WORLD_SIZE=str(ranks),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo",
                   OMP_NUM_THREADS=str(params["threads_per_rank"]))
        env.pop("PYTHONPATH", None)
        procs.append(subprocess.Popen([PY, os.path.join(SRC, "train_ddp.py")] + script_args(params), cwd=cwd,
                                      env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    outs = [p.communicate(timeout=300) for p in procs]
    for r, (p, (out, err)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, "rank %d by hand: exit %d\n%s\n%s" % (r, p.returncode, out, err)
    assert '"gridrun"' not in outs[0][0], "no protocol lines without the helper:\n" + outs[0][0]
    return outs[0][0]


def case_example():
    grid = os.path.join(SRC, "compare-cpu.yaml")
    # Predicted first: calibrate runs each configuration for a few steps (GRIDRUN_MAX_STEPS), the
    # script declares its steps per epoch, and simulate predicts the comparison from those rows.
    gridrun("calibrate", grid, "--out", OUT, "--accept-load")  # ctest -j: other tests beside it
    with open(os.path.join(OUT, "own-script-cpu", "calibration.json")) as f:
        configs = json.load(f)["configs"]
    assert len(configs) == 2 and all(c["steps_per_epoch"] == 32 and c["step_s"] > 0 for c in configs.values()), \
        configs
    sim = gridrun("simulate", grid, "--out", OUT).stdout
    assert re.search(r"predicted \(calibration\): ranks=1 .* ranks=2 .*", sim), sim
    assert "without a calibration" not in sim, sim
    print("calibrate: 2 configurations measured; " + [ln for ln in sim.splitlines() if ln.startswith("predicted")][0])
    r = gridrun("run", grid, "--out", OUT)
    run_dir = os.path.join(OUT, "own-script-cpu")
    jobs = state(run_dir)
    assert len(jobs) == 4, jobs
    two_rank = []
    for jid, rec in jobs.items():
        assert rec["state"] == "completed" and rec["exit_codes"] == [0], (jid, rec, r.stdout)
        p = job_params(run_dir, jid)
        assert p["model"] == "command", p
        st, why, steps, epochs = results(run_dir, jid)
        assert st == "completed", (jid, st, why)
        assert len(steps) == p["max_steps"] == 30, (jid, len(steps))
        assert [s for s, _ in steps] == list(range(1, 31)), steps
        assert epochs and epochs["epoch"] == [1.0] and 0 < epochs["test_acc"][0] <= 1, epochs
        # The script's own lines in the job's log, against what gridrun recorded from the protocol.
        with open(os.path.join(run_dir, "logs", jid + ".out")) as f:
            printed = printed_steps(f.read())
        assert [s for s, _ in printed] == [s for s, _ in steps], (jid, printed, steps)
        for (s, text), (_, loss) in zip(printed, steps):
            assert "%.8f" % loss == text, (jid, s, loss, text)
        if p["ranks"] == 2:
            two_rank.append((jid, p, printed))
            check_other_rank(run_dir, jid)
    assert len(two_rank) == 2 and {p["seed"] for _, p, _ in two_rank} == {1, 2}, two_rank
    # gridrun starts a DDP script as torchrun would: the same losses, step for step.
    for jid, p, printed in two_rank:
        mine = printed_steps(by_hand(p, 2))
        assert mine == printed, "job %s (seed %d) differs from the script run by hand:\n%s\n%s" % (
            jid, p["seed"], mine, printed)
    # status: every job listed, completed.
    rows = json.loads(gridrun("status", run_dir, "--format", "json").stdout)["jobs"]
    assert {row["id"] for row in rows} == set(jobs), rows
    text = gridrun("status", run_dir).stdout
    for jid in jobs:
        line = [ln for ln in text.splitlines() if ln.startswith(jid)]
        assert len(line) == 1 and "completed" in line[0], text
    # report: a verdict line for the ranks comparison, naming both phases and answering.
    rep = gridrun("report", run_dir).stdout
    # The Verdict section's paragraph (it wraps to the terminal width), as one line.
    lines = rep.splitlines()
    assert "Verdict" in lines, rep
    para = []
    for ln in lines[lines.index("Verdict") + 2:]:
        if not ln.strip():
            break
        para.append(ln.strip())
    verdict = [" ".join(para)]
    assert "ranks=1" in verdict[0] and "ranks=2" in verdict[0], rep
    assert re.search(r"wins?, [0-9.]+x faster|: inconclusive, ", verdict[0]), verdict
    print("example: 4 jobs completed; recorded losses = printed = by hand (2 ranks, seeds 1 and 2); "
          "verdict: " + verdict[0])
    # The phases are those of state.json, 2 jobs each (one per seed), as for gridrun-train's jobs:
    # the report finds a job's phase in its results file (meta.phase, from the job file's meta).
    tables = json.loads(gridrun("report", run_dir, "--format", "json").stdout)["tables"]
    phases = {row["phase"]: row for t in tables if t["title"].startswith("Phases (") for row in t["rows"]}
    assert set(phases) == {"ranks=1", "ranks=2"}, phases
    for label, row in phases.items():
        assert row["jobs"] == 2 and row["samples/s"] > 0, (label, row)
    assert "(0 jobs)" not in verdict[0], verdict
    check_tensorboard(run_dir, jobs)
    # Utilization is sampled from outside, for every job (each ran 2 s or more, at 2 samples/s).
    for jid in jobs:
        with h5py.File(os.path.join(run_dir, "results", jid + ".h5"), "r") as f:
            rows = int(f["util/rows"][0]) if "util" in f else 0
            assert rows > 0, (jid, "no /util rows", f["util/rank_cpu_pct"].shape if "util" in f else None)


def check_other_rank(run_dir, jid):
    """Rank 1's figures reach rank 0's file through the work folder (exec/rank_report.hpp): its step
    seconds for every step but the first (whose start no rank sees), its CPU and RSS in /util."""
    import math
    with h5py.File(os.path.join(run_dir, "results", jid + ".h5"), "r") as f:
        n = int(f["steps/rows"][0])
        per_rank = f["steps/rank_step_s"][:n]
        steps = [int(s) for s in f["steps/step"][:n]]
        u = int(f["util/rows"][0])
        cpu, rss = f["util/rank_cpu_pct"][:u], f["util/rank_rss_bytes"][:u]
    assert per_rank.shape == (n, 2), per_rank.shape
    timed = [s for s, row in zip(steps, per_rank) if math.isfinite(row[1]) and row[1] > 0]
    # Every row but the first waits for rank 1's line up to 3 s; on this machine all arrive,
    # and a row that missed it would show NaN (a loaded machine): most must have it.
    assert len(timed) >= n // 2 and 1 not in timed, (jid, steps, per_rank.tolist())
    assert any(math.isfinite(c) and c > 0 for c in cpu[:, 1]), (jid, cpu.tolist())
    assert any(math.isfinite(r) and r > 1e6 for r in rss[:, 1]), (jid, rss.tolist())


TB_READ = """import json, sys
from tensorboard.backend.event_processing import event_accumulator as ea
acc = ea.EventAccumulator(sys.argv[1], size_guidance={ea.SCALARS: 0})
acc.Reload()
print(json.dumps([[e.step, e.value] for e in acc.Scalars("step/loss")]))
"""


def check_tensorboard(run_dir, jobs):
    """The TensorBoard export of command jobs, read back by TensorBoard's own reader."""
    import numpy as np
    tb = os.path.join(WORK, "tb")
    gridrun("export", run_dir, "--format", "tensorboard", "--out", tb)
    folders = os.listdir(tb)
    for jid in jobs:
        (folder,) = [d for d in folders if d == jid or d.startswith(jid + "_")]
        p = subprocess.run([TB_PYTHON, "-c", TB_READ, os.path.join(tb, folder)], capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        points = json.loads(p.stdout)
        _, _, steps, _ = results(run_dir, jid)
        assert [s for s, _ in points] == [s for s, _ in steps], (jid, points, steps)
        assert [v for _, v in points] == [float(np.float32(loss)) for _, loss in steps], (jid, points, steps)
    print("tensorboard: the export of %d command jobs reads back with their recorded losses" % len(jobs))


def case_bad_input():
    bad = os.path.join(SRC, "bad-placeholder.yaml")
    with open(bad, "w") as f:
        f.write("name: bad-placeholder\n"
                "command: [/usr/bin/python3, train_ddp.py,\n"
                "          --lr, \"{nope}\"]\n")
    r = gridrun("plan", bad, ok=(2,))
    m = re.search(re.escape(bad) + r":(\d+):(\d+)", r.stderr) or re.search(r"bad-placeholder\.yaml:(\d+):(\d+)",
                                                                            r.stderr)
    assert m and int(m.group(1)) == 3 and int(m.group(2)) >= 1, r.stderr
    assert "{nope}" in r.stderr, r.stderr
    missing = os.path.join(SRC, "missing-script.yaml")
    with open(missing, "w") as f:
        f.write("name: missing-script\ncommand: [/usr/bin/python3, no_such_script.py, --seed, \"{seed}\"]\n")
    r = gridrun("plan", missing, ok=(2,))
    assert "no_such_script.py" in r.stderr and "missing-script.yaml" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(OUT, "bad-placeholder")) and \
        not os.path.exists(os.path.join(OUT, "missing-script")), "nothing may be written for bad input"
    print("bad input: exit 2 naming", m.group(0), "and no_such_script.py")


FAILING = """import sys
import time

import gridrun_job  # on PYTHONPATH under gridrun

seed = int(sys.argv[1])
if seed == 1:
    print("boom: seed 1 refuses to train", file=sys.stderr)
    sys.exit(1)
if seed == 3:
    gridrun_job.log_step(float("nan"), samples=8)  # json.dumps writes NaN: gridrun stops the job
    time.sleep(120)
gridrun_job.log_step(0.5, samples=8)
"""


def case_failing_program():
    # Seed 1 exits 1 with a line on stderr, seed 3 logs a NaN loss through the helper and would
    # sleep on; seeds 0 and 2 complete beside them.
    with open(os.path.join(SRC, "fails.py"), "w") as f:
        f.write(FAILING)
    g = os.path.join(SRC, "failing.yaml")
    with open(g, "w") as f:
        f.write("name: failing\ncommand: [/usr/bin/python3, fails.py, \"{seed}\"]\n"
                "defaults: {device: cpu}\nseeds: [0, 1, 2, 3]\n")
    r = gridrun("run", g, "--out", OUT, "--no-report", ok=(1,))
    run_dir = os.path.join(OUT, "failing")
    jobs = state(run_dir)
    seeds = {job_params(run_dir, j)["seed"]: j for j in jobs}
    assert sorted(seeds) == [0, 1, 2, 3], seeds
    for seed, jid in seeds.items():
        st, why, steps, _ = results(run_dir, jid)
        if seed == 1:
            assert jobs[jid]["state"] == "failed" and st == "failed", (jobs[jid], st, r.stdout)
            assert "boom: seed 1 refuses to train" in why, why
        elif seed == 3:
            assert jobs[jid]["state"] == "diverged" and st == "diverged", (jobs[jid], st, why, r.stdout)
            assert len(steps) == 1 and steps[0][1] != steps[0][1], steps  # NaN recorded
        else:
            assert jobs[jid]["state"] == "completed" and st == "completed", (jobs[jid], st, why, r.stdout)
            assert [loss for _, loss in steps] == [0.5], steps
    rows = {row["id"]: row for row in json.loads(gridrun("status", run_dir, "--format", "json").stdout)["jobs"]}
    assert "boom: seed 1 refuses to train" in rows[seeds[1]]["reason"], rows[seeds[1]]
    print("failing program: failed with its stderr as the reason; a NaN loss diverged; the 2 others completed")


OWN = """import sys

import gridrun_job  # on PYTHONPATH under gridrun

# The placeholders gave argv; GRIDRUN_PARAMS (the helper's params()) holds the same own values.
dropout, sched = float(sys.argv[1]), sys.argv[2]
p = gridrun_job.params()
assert p["dropout"] == dropout and p["sched"] == sched and "user_params" not in p, (p, sys.argv)
gridrun_job.log_step(dropout, samples=8)  # the loss the job records is its dropout
"""


def case_own_params():
    # A grid's own parameters (params:): declared, varied, passed through placeholders and
    # GRIDRUN_PARAMS, recorded, selectable by --only, a column of the report; a bad value of one is
    # refused at plan with its line.
    with open(os.path.join(SRC, "own.py"), "w") as f:
        f.write(OWN)
    g = os.path.join(SRC, "own-params.yaml")
    with open(g, "w") as f:
        f.write("name: own-params\n"
                "command: [/usr/bin/python3, own.py, \"{dropout}\", \"{sched}\"]\n"
                "params:\n"
                "  dropout: {default: 0.1, min: 0, max: 1}\n"
                "  sched: {default: cosine, choices: [cosine, linear]}\n"
                "defaults: {device: cpu}\n"
                "grid: {dropout: [0.1, 0.3], sched: [cosine, linear]}\n"
                "exclude: [{dropout: 0.3, sched: linear}]\n")
    gridrun("run", g, "--out", OUT, "--no-report")
    run_dir = os.path.join(OUT, "own-params")
    jobs = state(run_dir)
    assert len(jobs) == 3, jobs
    seen = set()
    for jid, rec in jobs.items():
        assert rec["state"] == "completed", (jid, rec)
        own = json.loads(job_params(run_dir, jid)["user_params"])
        st, why, steps, _ = results(run_dir, jid)
        assert st == "completed" and [loss for _, loss in steps] == [own["dropout"]], (jid, st, why, steps, own)
        seen.add((own["dropout"], own["sched"]))
    assert seen == {(0.1, "cosine"), (0.1, "linear"), (0.3, "cosine")}, seen
    rows = json.loads(gridrun("status", run_dir, "--only", "dropout=0.30", "--format", "json").stdout)["jobs"]
    assert len(rows) == 1, rows
    tables = json.loads(gridrun("report", run_dir, "--format", "json").stdout)["tables"]
    (jobs_table,) = [t for t in tables if t["title"] == "Jobs"]
    assert "dropout" in jobs_table["columns"] and "sched" in jobs_table["columns"], jobs_table["columns"]
    r = gridrun("plan", g, "--set", "dropout=1.5", ok=(2,))
    assert "--set dropout=1.5" in r.stderr and "out of range" in r.stderr, r.stderr
    with open(g) as f:
        text = f.read()
    with open(g, "w") as f:
        f.write(text.replace("dropout: [0.1, 0.3]", "dropout: [0.1, high]"))
    r = gridrun("plan", g, ok=(2,))
    assert re.search(r"own-params\.yaml:7:\d+: grid\.dropout\[1\]: expected a number, got 'high'", r.stderr), r.stderr
    print("own parameters: 3 jobs (one excluded), each got its values through argv and GRIDRUN_PARAMS; "
          "--only dropout=0.30 keeps 1; the report has dropout and sched columns; bad values exit 2")



SLEEPER = """import json, time
print(json.dumps({"gridrun": "step", "loss": 0.25, "samples": 4}), flush=True)
time.sleep(600)
"""


def case_time_limit():
    # A program that outlives its time_limit (MM:SS) is stopped (SIGTERM), and its job fails with
    # the limit as the reason; the step it logged before is kept.
    with open(os.path.join(SRC, "sleeper.py"), "w") as f:
        f.write(SLEEPER)
    g = os.path.join(SRC, "sleeper.yaml")
    with open(g, "w") as f:
        f.write("name: sleeper\ncommand: [/usr/bin/python3, sleeper.py]\n"
                "defaults: {device: cpu, time_limit: \"00:03\"}\n")
    gridrun("run", g, "--out", OUT, "--no-report", ok=(1,))
    run_dir = os.path.join(OUT, "sleeper")
    (jid, job), = state(run_dir).items()
    st, why, steps, _ = results(run_dir, jid)
    assert job["state"] == "failed" and st == "failed", (job, st, why)
    assert "time_limit 00:03 reached" in why, why
    assert [loss for _, loss in steps] == [0.25], steps
    assert not [c for c in left_running() if "sleeper" in c and "defunct" not in c], left_running()
    print("time_limit: the program was stopped at 00:03 and its job failed naming the limit")


ENDLESS = """import json, time
step = 0
while True:  # ignores GRIDRUN_MAX_STEPS
    step += 1
    print(json.dumps({"gridrun": "step", "loss": 1.0 / step, "samples": 4}), flush=True)
    time.sleep(0.02)
"""


def case_step_limit():
    # A program that ignores its step limit (GRIDRUN_MAX_STEPS = max_steps) is stopped at the first
    # step past it; the job is completed with its rows.
    with open(os.path.join(SRC, "endless.py"), "w") as f:
        f.write(ENDLESS)
    g = os.path.join(SRC, "endless.yaml")
    with open(g, "w") as f:
        f.write("name: endless\ncommand: [/usr/bin/python3, endless.py]\ndefaults: {device: cpu, max_steps: 5}\n")
    gridrun("run", g, "--out", OUT, "--no-report")
    run_dir = os.path.join(OUT, "endless")
    (jid, job), = state(run_dir).items()
    st, why, steps, _ = results(run_dir, jid)
    assert job["state"] == "completed" and st == "completed", (job, st, why)
    assert [s for s, _ in steps] == [1, 2, 3, 4, 5, 6], steps
    print("step limit: a program past max_steps 5 was stopped at step 6 and its job completed")


SLOW = """import json, os, sys, time

# A checkpoint every 5 steps (the step reached); one from the start is what makes gridrun resume
# the job (GRIDRUN_RESUME=1). A resumed attempt goes on after its checkpoint's step.
ckpt = os.path.join(os.environ["GRIDRUN_CHECKPOINT_DIR"], "ckpt")
start = 1
if os.environ["GRIDRUN_RESUME"] == "1":
    start = int(open(ckpt).read()) + 1
elif os.environ["RANK"] == "0":
    open(ckpt, "w").write("0")
for step in range(start, 41):
    time.sleep(0.1)
    if os.environ["RANK"] == "0":
        print(json.dumps({"gridrun": "step", "step": step, "loss": 1.0 / step, "samples": 16}), flush=True)
        if step % 5 == 0:
            open(ckpt + ".tmp", "w").write(str(step))
            os.replace(ckpt + ".tmp", ckpt)
print("resumed at %d" % start if os.environ["GRIDRUN_RESUME"] == "1" else "fresh", file=sys.stderr)
"""


def case_kill9():
    # kill -9 of `gridrun run` while a 2-rank command job trains: gridrun-exec sees its owner gone
    # and stops the program; nothing of the job is left running. The next `gridrun run` resumes the
    # job (GRIDRUN_RESUME=1) and it completes.
    import time
    with open(os.path.join(SRC, "slow.py"), "w") as f:
        f.write(SLOW)
    g = os.path.join(SRC, "slow.yaml")
    with open(g, "w") as f:
        f.write("name: slow\ncommand: [/usr/bin/python3, slow.py]\ndefaults: {device: cpu, ranks: 2}\n")
    run_dir = os.path.join(OUT, "slow")
    p = subprocess.Popen([GRIDRUN, "run", g, "--out", OUT, "--no-report"], env=ENV, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    beat = None
    while time.monotonic() < deadline:  # until the job has reported steps (its heartbeat)
        hb = [f for f in os.listdir(os.path.join(run_dir, "logs")) if f.endswith(".heartbeat")] \
            if os.path.isdir(os.path.join(run_dir, "logs")) else []
        text = open(os.path.join(run_dir, "logs", hb[0])).read() if hb else ""
        m = re.search(r'"step":(\d+)', text)
        if m and int(m.group(1)) >= 7:  # past the first checkpoint (step 5)
            beat = hb[0]
            break
        time.sleep(0.1)
    assert beat, "the slow job reported no step within 120 s"
    # status is live for a command job: the running job's row shows the step its heartbeat holds.
    rows = json.loads(gridrun("status", run_dir, "--format", "json").stdout)["jobs"]
    assert len(rows) == 1 and rows[0]["state"] == "running" and (rows[0].get("step") or 0) >= 1, rows
    p.kill()
    p.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and [c for c in left_running() if "slow" in c and "defunct" not in c]:
        time.sleep(0.2)
    left = [c for c in left_running() if "slow" in c]
    assert not left, "left running after kill -9 of gridrun run:\n" + "\n".join(left)
    gridrun("run", g, "--out", OUT, "--no-report")
    jobs = state(run_dir)
    (jid, job), = jobs.items()
    assert job["state"] == "completed", job
    with open(os.path.join(run_dir, "logs", jid + ".err")) as f:
        m = re.search(r"resumed at (\d+)", f.read())
    assert m and int(m.group(1)) > 5, "the second attempt was not told to resume"
    # The results file holds both attempts: the first one's steps before the checkpoint, the
    # resumed one's from there, each step once (the redone ones dropped).
    st, why, steps, _ = results(run_dir, jid)
    assert st == "completed" and [s for s, _ in steps] == list(range(1, 41)), (st, why, steps)
    assert all(abs(loss - 1.0 / s) < 1e-12 for s, loss in steps), steps
    with h5py.File(os.path.join(run_dir, "results", jid + ".h5"), "r") as f:
        resumed = list(f["attempts/resumed_from_step"][:])
    assert resumed == [0, int(m.group(1))], resumed
    print("kill -9: nothing left running; the next run resumed the job at step %s (GRIDRUN_RESUME=1) and "
          "completed it; its file holds steps 1-40 of both attempts" % m.group(1))


if __name__ == "__main__":
    shutil.copytree(os.path.join(EXAMPLES, "own-script"), SRC, ignore=shutil.ignore_patterns("__pycache__"))
    case_bad_input()
    case_failing_program()
    case_own_params()
    case_time_limit()
    case_step_limit()
    case_kill9()
    case_example()
    # A passed test leaves nothing behind; a failed one keeps WORK for the post-mortem.
    shutil.rmtree(WORK, ignore_errors=True)
    print("ok: exec.e2e_command")
