"""End-to-end scenarios of `gridrun run` with real mpirun and the real gridrun-train.

Usage: e2e_run.py GRIDRUN GRIDRUN_TRAIN EXAMPLES_DIR CASE
Each case builds its own grid in a fresh temp dir, runs the real binaries and asserts on exit
codes, state.json, job files and the HDF5 results (read back with h5py). Synchronisation is by
reading gridrun's event lines from a pipe, never by sleeping.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py

from e2e_proc import processes_with, ranks_of

GRIDRUN, TRAIN, EXAMPLES, CASE = sys.argv[1:5]
WORK = tempfile.mkdtemp(prefix="gridrun-e2e-sched-")
OUT = os.path.join(WORK, "runs")


def grid(name, body):
    path = os.path.join(WORK, name + ".yaml")
    with open(path, "w") as f:
        f.write("name: %s\n%s" % (name, body))
    return path


SMALL = """defaults:
  dataset: synthetic
  device: cpu
  threads_per_rank: 1
  train_samples: 512
  test_samples: 128
  batch_per_rank: 32
  lr: 0.05
"""


def run(args, **kw):
    return subprocess.run([GRIDRUN, "run"] + args + ["--out", OUT, "--train-bin", TRAIN], text=True,
                          capture_output=True, **kw)


def start(args):
    return subprocess.Popen([GRIDRUN, "run"] + args + ["--out", OUT, "--train-bin", TRAIN, "--no-report"],
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1)


def read_until(proc, needle, lines):
    for line in proc.stdout:
        lines.append(line)
        if needle in line:
            return line
    raise AssertionError("gridrun ended before printing %r:\n%s\n%s" % (needle, "".join(lines), proc.stderr.read()))


def job_of(line, word):
    # event lines look like "[   1.2s] start   <id> ..." / "[   3.4s] done    <id> completed in 2s"
    return line.split(word, 1)[1].split()[0]


def state(name):
    with open(os.path.join(OUT, name, "state.json")) as f:
        return json.load(f)


def status(name, job_id):
    with h5py.File(os.path.join(OUT, name, "results", job_id + ".h5"), "r") as f:
        a = f.attrs["status"]
        return a.decode() if isinstance(a, bytes) else str(a)


def wait_for_ranks(job_file, deadline_s=60):
    # The ranks appear a moment after mpirun starts; wait for the condition with a deadline.
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        pids = ranks_of(job_file)
        if pids:
            return pids
        time.sleep(0.05)
    raise AssertionError("no gridrun-train process for " + job_file)


# The seconds-long synthetic grid named quickstart (examples/quickstart.yaml trains for a minute
# and more on real data; placement and binding are the same).
QUICKSTART = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "quickstart.yaml")


def case_quickstart():
    r = run([QUICKSTART])
    assert r.returncode == 0, r.stdout + r.stderr
    st = state("quickstart")
    assert len(st["jobs"]) == 4
    two_rank = 0
    for jid, rec in st["jobs"].items():
        assert rec["state"] == "completed", (jid, rec)
        assert rec["attempts"] == 1 and rec["exit_codes"] == [0]
        assert status("quickstart", jid) == "completed"
        with open(os.path.join(OUT, "quickstart", "jobs", jid + ".json")) as f:
            job = json.load(f)
        cores = job["meta"]["cores"].split(",")
        assert len(cores) == job["params"]["ranks"] * job["params"]["threads_per_rank"], job["meta"]
        two_rank += job["params"]["ranks"] == 2
        with h5py.File(os.path.join(OUT, "quickstart", "results", jid + ".h5"), "r") as f:
            m = f.attrs["meta.cores"]
            assert (m.decode() if isinstance(m, bytes) else str(m)) == job["meta"]["cores"]
    assert two_rank == 2
    # Binding really happened: Open MPI reports each rank on its own core, once per mpirun: in the
    # log of the job that started the warm worker (the default launch) the other jobs then reuse.
    err = ""
    for some in [j for j in st["jobs"] if st["jobs"][j]["cores"] == "0,1"]:
        with open(os.path.join(OUT, "quickstart", "logs", some + ".err")) as f:
            err += f.read()
    assert "rank 0 bound to socket 0[core 0" in err and "rank 1 bound to socket 0[core 1" in err, err
    assert os.path.exists(os.path.join(OUT, "quickstart", "results.h5"))
    # Idempotent: a second run launches nothing, and leaves state.json as it was (not rewritten:
    # a run with nothing to do writes nothing).
    state_file = os.path.join(OUT, "quickstart", "state.json")
    before = os.stat(state_file)
    r2 = run([QUICKSTART, "--no-report"])
    assert r2.returncode == 0 and "4 already completed, 0 to run" in r2.stdout, r2.stdout
    assert "start " not in r2.stdout
    after = os.stat(state_file)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), "state.json rewritten"


def case_kill_rank():
    g = grid("killrank", SMALL + "  epochs: 40\ngrid:\n  model: [mlp]\n  ranks: [2]\n  seed: [1, 2]\n")
    p = start([g, "--retries", "1", "--max-parallel", "1"])
    lines = []
    line = read_until(p, "start ", lines)
    victim = job_of(line, "start ")
    job_file = os.path.join(OUT, "killrank", "jobs", victim + ".json")
    os.kill(wait_for_ranks(job_file)[-1], signal.SIGKILL)
    rest, _ = p.communicate(timeout=600)
    out = "".join(lines) + rest
    assert p.returncode == 0, out
    st = state("killrank")["jobs"]
    assert st[victim]["attempts"] == 2 and st[victim]["exit_codes"][0] != 0 and st[victim]["exit_codes"][1] == 0, st
    others = [j for j in st if j != victim]
    assert len(others) == 1 and st[others[0]]["attempts"] == 1, st
    assert "retry   " + victim in out, out
    for j in st:
        assert status("killrank", j) == "completed"


def case_kill_gridrun():
    g = grid("killrun", SMALL + "  epochs: 3\ngrid:\n  model: [mlp]\n  seed: [1, 2, 3]\n")
    p = start([g, "--max-parallel", "1"])
    lines = []
    line = read_until(p, " completed in ", lines)
    first = job_of(line, "done ")
    p.kill()
    p.wait()
    mtime = os.path.getmtime(os.path.join(OUT, "killrun", "results", first + ".h5"))
    r = run([g, "--max-parallel", "1", "--no-report"])
    assert r.returncode == 0, r.stdout + r.stderr
    # The job gridrun had started after the first one may or may not have finished on its own by
    # the time the rerun looks (that depends on speed); either count is right, a rerun of the first
    # job is not.
    m = re.search(r"(\d+) already completed, (\d+) to run", r.stdout)
    assert m and int(m.group(1)) >= 1 and int(m.group(1)) + int(m.group(2)) == 3, r.stdout
    assert "start   " + first not in r.stdout
    st = state("killrun")["jobs"]
    assert st[first]["attempts"] == 1, st
    assert os.path.getmtime(os.path.join(OUT, "killrun", "results", first + ".h5")) == mtime
    for j in st:
        assert st[j]["state"] == "completed" and status("killrun", j) == "completed", st


def case_kill_gridrun_orphans():
    # SIGKILL of gridrun while a 2-rank job trains: mpirun and both ranks must go on their own
    # (--owner-pid), after a checkpoint, so that the rerun resumes instead of starting over.
    # 100 epochs: the job is far from its end when its first epoch-end checkpoint appears.
    g = grid("orphans", SMALL + "  epochs: 100\ngrid:\n  model: [mlp]\n  ranks: [2]\n")
    p = start([g])
    lines = []
    jid = job_of(read_until(p, "start ", lines), "start ")
    job_file = os.path.join(OUT, "orphans", "jobs", jid + ".json")
    ckpts = os.path.join(OUT, "orphans", "checkpoints", jid)
    end = time.monotonic() + 120
    while time.monotonic() < end and not (os.path.isdir(ckpts) and
                                          [c for c in os.listdir(ckpts) if "." not in c]):
        time.sleep(0.05)
    assert len(wait_for_ranks(job_file)) == 2
    p.kill()
    p.wait()
    deadline = time.monotonic() + 10
    left = processes_with(job_file)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = processes_with(job_file)
    assert not left, "still running 10 s after gridrun was killed: %s" % [
        open("/proc/%d/cmdline" % q).read().replace("\0", " ") for q in left if os.path.exists("/proc/%d" % q)]
    with open(os.path.join(OUT, "orphans", "logs", jid + ".err")) as f:
        err = f.read()
    assert "owner PID %d is gone" % p.pid in err, err
    assert status("orphans", jid) == "interrupted"
    r = run([g, "--no-report"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(--resume)" in r.stdout, r.stdout
    assert status("orphans", jid) == "completed"
    with h5py.File(os.path.join(OUT, "orphans", "results", jid + ".h5"), "r") as f:
        assert int(f.attrs["resumed_from_step"]) > 1, dict(f.attrs)
        assert len(f["epochs/epoch"][:]) == 100


def case_concurrent_and_interrupt():
    # Never finishes within the test (both runs of it are interrupted), however fast the machine.
    g = grid("locked", SMALL + "  epochs: 1000000\ngrid:\n  model: [mlp]\n")
    p = start([g])
    lines = []
    jid = job_of(read_until(p, "start ", lines), "start ")
    r = run([g, "--no-report"])
    assert r.returncode != 0, r.stdout
    assert "PID %d" % p.pid in r.stderr, r.stderr
    # Ctrl-C: the running job checkpoints and stops (exit 75); the run exits 1 and can be resumed.
    # Wait until the runner has opened its results file (its signal handlers are installed by then).
    partial = os.path.join(OUT, "locked", "results", jid + ".h5.partial")
    end = time.monotonic() + 120
    while not os.path.exists(partial) and time.monotonic() < end:
        time.sleep(0.05)
    assert os.path.exists(partial), "runner never started writing " + partial
    p.send_signal(signal.SIGINT)
    rest, err = p.communicate(timeout=300)
    out = "".join(lines) + rest
    assert p.returncode == 1, out + err
    assert "interrupted:" in out, out
    st = state("locked")["jobs"]
    rec = st[jid]
    assert rec["state"] == "interrupted" and rec["exit_codes"] == [75], rec
    assert status("locked", jid) == "interrupted"
    # The next run resumes it from the checkpoint.
    p2 = start([g])
    line = read_until(p2, "start ", [])
    assert "(--resume)" in line, line
    p2.send_signal(signal.SIGINT)
    p2.communicate(timeout=300)
    assert p2.returncode == 1


def case_large_vs_small_cpu():
    r = run([os.path.join(EXAMPLES, "large-vs-small-cpu.yaml")])
    assert r.returncode == 0, r.stdout + r.stderr
    st = state("large-vs-small-cpu")
    phases = st["phases"]
    assert set(phases) == {"1", "2"}, phases
    # state.json records a phase's facts; the report derives its figures from them and the job files.
    for v in phases.values():
        assert v["makespan_s"] > 0 and len(v["jobs"]) == 2 and v["busy_resource_s"] > 0 and v["capacity"] == 2, v
    rep = subprocess.run([GRIDRUN, "report", os.path.join(OUT, "large-vs-small-cpu"), "--format", "json"],
                         text=True, capture_output=True)
    assert rep.returncode == 0, rep.stderr
    table = [t for t in json.loads(rep.stdout)["tables"] if t["title"].startswith("Phases (")]
    assert len(table) == 1 and {r["phase"] for r in table[0]["rows"]} == {"ranks=1", "ranks=2"}, rep.stdout
    for row in table[0]["rows"]:
        assert row["samples/s"] > 0 and row["jobs"] == 2, row
    # ranks=2 jobs ran one after another, ranks=1 jobs side by side on different cores
    jobs = st["jobs"]
    two = sorted((jobs[j]["start_unix"], jobs[j]["end_unix"]) for j in phases["2"]["jobs"])
    assert two[0][1] <= two[1][0], two
    one = [jobs[j] for j in phases["1"]["jobs"]]
    assert {one[0]["cores"], one[1]["cores"]} == {"0", "1"}, one
    assert min(o["end_unix"] for o in one) > max(o["start_unix"] for o in one)
    assert "Phases (one arrangement each)" in r.stdout, r.stdout
    for v in phases.values():
        assert ("%.1f" % v["makespan_s"]) in r.stdout or ("%.0f" % v["makespan_s"]) in r.stdout, r.stdout
    # The verdict names each arrangement by what it is, with its makespan, and answers: a winner
    # with its ratio (from the two makespans) or "inconclusive" with the reason.
    rows, verdict, _ = phase_rows(os.path.join(OUT, "large-vs-small-cpu"))
    assert rows and verdict, (rows, verdict)
    head = verdict[0]
    assert "(ranks=2, 2 jobs x 2 ranks)" in head and "(ranks=1, 2 jobs x 1 rank)" in head, head
    assert "one large job at a time" in head and "several small side by side" in head, head
    for label in ("ranks=1", "ranks=2"):
        assert ("%.1f s" % rows[label]["makespan_s"]) in head, (label, rows[label], head)
    m1, m2 = rows["ranks=1"]["makespan_s"], rows["ranks=2"]["makespan_s"]
    m = re.search(r"(?:wins?|was) ?,? ?([0-9.]+)x faster", head)
    assert m and abs(float(m.group(1)) - max(m1, m2) / min(m1, m2)) < 0.006, (head, m1, m2)
    winner = "several small side by side win, " if m1 < m2 else "one large job at a time wins, "
    assert winner in head or ": inconclusive, " in head, head
    if ": inconclusive, " in head:
        assert len(verdict) > 1, verdict  # the reason is a sentence of its own


def phase_rows(run_dir, *extra):
    """The phase table of `gridrun report RUN --format json` (rows by phase label) and the verdict."""
    r = subprocess.run([GRIDRUN, "report", run_dir, "--format", "json"] + list(extra), text=True,
                       capture_output=True)
    assert r.returncode == 0, r.stderr
    tables = json.loads(r.stdout)["tables"]
    phases = [t for t in tables if t["title"].startswith("Phases (")]
    verdict = [row["verdict"] for t in tables if t["title"] == "Verdict" for row in t["rows"]]
    jobs = [t for t in tables if t["title"].startswith("Jobs")][0]
    return ({row["phase"]: row for row in phases[0]["rows"]} if phases else {}), verdict, jobs


def case_phase_sittings():
    # A compare grid interrupted inside a phase (ranks=2 runs its two jobs one after another; Ctrl-C
    # once the first is done) and run again: that phase ran in two sittings and gets no figures,
    # only the reason and the command that measures it again; --rerun phase=2 measures it in one
    # sitting. Then a grid with one more seed, and one with a changed parameter:
    # the report shows the current grid's jobs only, with a line saying how many were left out.
    body = SMALL + "compare: {by: ranks}\ngrid:\n  model: [mlp, lenet]\n  ranks: [2, 1]\n  epochs: [3]\n"
    g = grid("sittings", body)
    rd = os.path.join(OUT, "sittings")
    p = start([g])
    lines = []
    read_until(p, "phase ranks=2:", lines)
    read_until(p, "] done ", lines)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=300)
    assert p.returncode == 1, "".join(lines)
    r = run([g, "--no-report"])
    assert r.returncode == 0, r.stdout + r.stderr
    rows, verdict, _ = phase_rows(rd)
    assert set(rows) == {"ranks=2", "ranks=1"}, rows
    assert rows["ranks=1"]["makespan_s"] > 0 and rows["ranks=1"]["ran"] == "2 jobs x 1 rank, side by side", rows
    assert rows["ranks=2"]["makespan_s"] is None and rows["ranks=2"]["ran"] == "not measured", rows
    line = [v for v in verdict if v.startswith("No verdict for ranks=2")]
    assert line and "--rerun phase=2" in line[0], verdict
    r = run([g, "--no-report", "--rerun", "phase=2"])
    assert r.returncode == 0, r.stdout + r.stderr
    rows, verdict, _ = phase_rows(rd)
    assert rows["ranks=2"]["makespan_s"] > 0 and rows["ranks=2"]["ran"] == "2 jobs x 2 ranks, one after another", rows
    assert rows["ranks=1"]["makespan_s"] > 0, rows
    # The two phases were measured in different sittings: compared as they are when their loads
    # were alike, else inconclusive with the command that measures both together.
    m1, m2 = rows["ranks=1"]["makespan_s"], rows["ranks=2"]["makespan_s"]
    apart = [v for v in verdict if v.startswith("The phases were measured apart (")]
    assert len(apart) == 1, verdict
    if "under alike load" in apart[0]:
        winner = "several small side by side win, " if m1 < m2 else "one large job at a time wins, "
        assert winner + "%.2fx faster" % (max(m1, m2) / min(m1, m2)) in verdict[0], (verdict, m1, m2)
    else:
        assert ": inconclusive, " in verdict[0] and "--rerun compare" in apart[0], verdict
    # --rerun phase=V names a phase of the grid
    r = run([g, "--rerun", "phase=7"])
    assert r.returncode == 2 and "no phase ranks=7" in r.stderr, r.stderr
    # One more seed: the new jobs run in a later sitting, so neither phase is a measurement now.
    g = grid("sittings", body + "seeds: [0, 1]\n")
    r = run([g, "--no-report"])
    assert r.returncode == 0, r.stdout + r.stderr
    rows, verdict, jobs = phase_rows(rd)
    assert len(rows) == 2 and all(row["ran"] == "not measured" for row in rows.values()), rows
    assert len(jobs["rows"]) == 8 and not any("left out" in n for n in jobs["notes"]), jobs["notes"]
    # A changed parameter: 8 new jobs; the 8 of the earlier grid are left out, and --all shows them.
    g = grid("sittings", body.replace("epochs: [3]", "epochs: [2]") + "seeds: [0, 1]\n")
    r = run([g, "--no-report"])
    assert r.returncode == 0, r.stdout + r.stderr
    rows, verdict, jobs = phase_rows(rd)
    assert len(jobs["rows"]) == 8, jobs["rows"]
    assert any("8 job(s) of the run directory are not in its current grid" in n for n in jobs["notes"]), jobs
    assert len(rows) == 2 and all(row["ran"] != "not measured" for row in rows.values()), rows  # ran together
    _, _, jobs = phase_rows(rd, "--all")
    assert len(jobs["rows"]) == 16, len(jobs["rows"])


def case_calibrate_predict():
    # Calibrate a compare grid (its configurations alone, then the side-by-side group the packed
    # policy makes on 2 cores), predict it, run it, and check the prediction beside the measurement:
    # simulate --format json has the same phase names as state.json; --against prints both; the
    # report's verdict says what was predicted; each job file says where its time went.
    g = os.path.join(EXAMPLES, "large-vs-small-cpu.yaml")
    rd = os.path.join(OUT, "large-vs-small-cpu")
    c = subprocess.run([GRIDRUN, "calibrate", g, "--out", OUT, "--train-bin", TRAIN, "--steps", "5",
                        "--accept-load"],  # other tests run beside it (ctest -j)
                       text=True, capture_output=True)
    assert c.returncode == 0, c.stdout + c.stderr
    assert "4 configuration(s)" in c.stdout and "side by side:" in c.stdout, c.stdout
    assert re.search(r"calibration took .*% of the grid's predicted", c.stdout), c.stdout
    # One launch per launch key (ranks=2, ranks=1: mlp and lenet share a process), one for the
    # side-by-side pair (a process per member): 4 in all, not 6.
    assert "4 jobs in 2 launch(es)" in c.stdout and "(4 launch(es))" in c.stdout, c.stdout
    assert c.stdout.count(", in the process of [") == 2, c.stdout
    # A grid of a few seconds costs less to run than to predict: calibrate says so when it does.
    pct = float(re.search(r"calibration took [^,]*, ([0-9.]+) % of the grid's predicted", c.stdout).group(1))
    if abs(pct - 100) > 0.1:  # the printed share is rounded; the decision is made before that
        assert ("costs less than predicting it" in c.stdout) == (pct >= 100), c.stdout
    cal = json.load(open(os.path.join(rd, "calibration.json")))
    assert len(cal["configs"]) == 4 and len(cal["groups"]) == 1, cal
    # The conditions it was measured under (issue 58): the load recorded, whatever it was.
    assert 0 <= cal["conditions"]["max_other_cpu_share"] <= 1, cal["conditions"]
    assert all(0 <= f["other_cpu_share"] <= 1 for f in cal["configs"].values()), cal["configs"]
    for f in cal["configs"].values():
        assert f["launch_s"] > 0 and f["step_s"] > 0 and f["steps_per_epoch"] > 0, f
    assert len(cal["groups"][0]["members"]) == 2, cal["groups"]
    s = subprocess.run([GRIDRUN, "simulate", g, "--out", OUT, "--train-bin", TRAIN, "--format", "json"],
                       text=True, capture_output=True)
    assert s.returncode == 0, s.stderr
    pred = json.loads(s.stdout)
    assert pred["durations"].startswith("calibration of"), pred["durations"]
    assert pred["phases"]["2"]["arrangement"] == "2 jobs x 2 ranks, one after another", pred["phases"]
    assert pred["phases"]["1"]["arrangement"] == "2 jobs x 1 rank, side by side", pred["phases"]
    assert os.path.exists(os.path.join(rd, "prediction.json"))
    assert ("costs less than predicting it" in s.stderr) == (cal["cost_s"] >= pred["makespan_s"]), \
        (s.stderr, cal["cost_s"], pred["makespan_s"])
    # The chained configurations' launch is the process's launch and load plus their own set-up,
    # so more than the set-up alone (a fact of the bookkeeping, whatever the machine's speed; a
    # ratio to the first's was not: it failed once on a loaded machine).
    heads = {}
    for f in cal["configs"].values():
        heads.setdefault(f["label"].split(" ranks=")[1].split()[0], []).append(f)
    for ranks, figs in heads.items():
        assert len(figs) == 2, (ranks, figs)
        for f in figs:
            assert f["launch_s"] > f["warm_launch_s"] > 0, (ranks, f)
    r = run([g])
    assert r.returncode == 0, r.stdout + r.stderr
    st = state("large-vs-small-cpu")
    assert set(st["phases"]) == set(pred["phases"]), (st["phases"], pred["phases"])
    a = subprocess.run([GRIDRUN, "simulate", g, "--out", OUT, "--train-bin", TRAIN, "--against", rd],
                       text=True, capture_output=True)
    assert a.returncode == 0, a.stderr
    assert "prediction vs measurement" in a.stdout and re.search(r"jobs: 4 measured, median \|error\|", a.stdout), \
        a.stdout
    rows, verdict, _ = phase_rows(rd)
    assert rows["ranks=1"]["predicted_s"] > 0 and rows["ranks=2"]["predicted_s"] > 0, rows
    assert any("(predicted" in v for v in verdict), verdict
    # A simulate after the run keeps the prediction made before it (what the report shows).
    before = open(os.path.join(rd, "prediction.json")).read()
    s2 = subprocess.run([GRIDRUN, "simulate", g, "--out", OUT, "--train-bin", TRAIN, "--policy", "fifo"],
                        text=True, capture_output=True)
    assert s2.returncode == 0 and "prediction.json kept" in s2.stdout, s2.stdout + s2.stderr
    assert open(os.path.join(rd, "prediction.json")).read() == before
    for row in rows.values():
        assert 0 < row["launch%"] < 100, row
    # Where the time went, in the job file: launch before the first step, then training.
    for job in st["jobs"]:
        with h5py.File(os.path.join(rd, "results", job + ".h5"), "r") as f:
            sm = {k: float(f["summary"][k][0]) for k in f["summary"]}
        if sm["launch_warm"] == 1:  # its worker's process started before it, and loaded the libraries
            assert sm["process_start_unix"] <= sm["launched_unix"] <= sm["first_step_unix"] < sm["finished_unix"], sm
            assert sm["time_load_s"] == 0 and sm["time_setup_s"] > 0 and sm["time_train_s"] > 0, sm
        else:
            assert sm["launched_unix"] <= sm["process_start_unix"] <= sm["first_step_unix"] < sm["finished_unix"], sm
            assert sm["time_load_s"] > 0 and sm["time_setup_s"] > 0 and sm["time_train_s"] > 0, sm
        assert abs(st["jobs"][job]["start_unix"] - sm["launched_unix"]) < 5, (st["jobs"][job], sm)


def case_bad_input():
    g = grid("toolarge", SMALL + "grid:\n  model: [mlp]\n  ranks: [8]\n")
    r = run([g, "--cores", "2"])
    assert r.returncode == 2 and "needs 8 ranks" in r.stderr and "fit on no node" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(OUT, "toolarge")), "nothing may be written for bad input"
    c = os.path.join(WORK, "cluster.yaml")
    with open(c, "w") as f:
        f.write("nodes:\n  - {name: a, cores: 4}\n  - {name: b, cores: two}\n")
    r = subprocess.run([GRIDRUN, "simulate", g, "--cluster", c], text=True, capture_output=True)
    assert r.returncode == 2 and "cluster.yaml:3:" in r.stderr and "nodes[1].cores" in r.stderr, r.stderr
    for args, needle in ((["--steps", "1"], "--steps"), (["--cluster", c], "--cluster"), (["--budget", "0"], "--budget")):
        r = subprocess.run([GRIDRUN, "calibrate", g, "--out", OUT] + args, text=True, capture_output=True)
        assert r.returncode == 2 and needle in r.stderr, (args, r.stderr)
    assert not os.path.exists(os.path.join(OUT, "toolarge")), "nothing may be written for bad input"


def case_calibrate_loaded():
    # Issue 58: a calibration measured beside other work is never trusted silently. With a CPU hog
    # per core (started here, so the load is certain whatever else the machine runs), calibrate
    # measures the configuration again, stores nothing and exits 1 naming the share and the command
    # to rerun; with --accept-load it keeps the figures, calibration.json records the load, and
    # simulate prints it beside the prediction.
    g = grid("loaded", SMALL + "  epochs: 1\ngrid:\n  model: [mlp]\n")
    rd = os.path.join(OUT, "loaded")
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        cal = [GRIDRUN, "calibrate", g, "--out", OUT, "--train-bin", TRAIN, "--steps", "3"]
        r = subprocess.run(cal, text=True, capture_output=True)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "disturbed: other processes took" in r.stdout and "measuring it again" in r.stdout, r.stdout
        m = re.search(r"nothing stored: other processes took (\d+) % of the CPU while mlp cpu ranks=1 bpr=32 was "
                      r"measured, in each of 2 tries \(more than 10 %\)", r.stdout)
        assert m and int(m.group(1)) > 10, r.stdout
        again = r.stdout.split("Run it again on a quiet machine: ", 1)[-1].split(" (or add --accept-load", 1)[0]
        assert again.startswith("gridrun calibrate %s " % g), r.stdout
        for flag in ("--out %s" % OUT, "--steps 3", "--train-bin %s" % TRAIN):
            assert " " + flag in again, (flag, again)
        assert not os.path.exists(os.path.join(rd, "calibration.json")), "a disturbed calibration was stored"
        r = subprocess.run(cal + ["--accept-load"], text=True, capture_output=True)
        assert r.returncode == 0 and "WARNING: other processes took up to" in r.stdout, r.stdout + r.stderr
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    cond = json.load(open(os.path.join(rd, "calibration.json")))["conditions"]
    assert cond["accepted_load"] is True and cond["max_other_cpu_share"] > 0.10 and cond["repeated"] == 0, cond
    s = subprocess.run([GRIDRUN, "simulate", g, "--out", OUT, "--train-bin", TRAIN], text=True, capture_output=True)
    assert s.returncode == 0, s.stdout + s.stderr
    assert re.search(r"calibrated on \S+ .*WARNING: other processes took up to \d+ % of the CPU while it measured "
                     r"\(kept with --accept-load\)", s.stdout), s.stdout
    pred = json.load(open(os.path.join(rd, "prediction.json")))
    assert pred["calibration_other_cpu_share"] == cond["max_other_cpu_share"], pred


def case_failure_reason():
    # A job that fails on bad input (CIFAR-10 files that are there, so the planner passes them, but
    # truncated: 7 bytes) beside one that completes: the runner's own line, without Open MPI's
    # banners, in the event line, in status (table, json, csv) and in the report (table, json); exit
    # 2 is attempted once despite --retries.
    import csv
    import io

    missing = os.path.join(WORK, "truncated-cifar")
    os.makedirs(missing, exist_ok=True)
    for name in ["data_batch_%d.bin" % k for k in range(1, 6)] + ["test_batch.bin"]:
        with open(os.path.join(missing, name), "wb") as f:
            f.write(b"7 bytes")
    g = grid("badinput", SMALL + "  epochs: 1\ngrid:\n  model: [mlp]\n  dataset: [synthetic, cifar10]\n"
             "  data_dir: [%s]\n" % missing)
    r = run([g, "--retries", "2"])
    assert r.returncode == 1, r.stdout + r.stderr
    run_dir = os.path.join(OUT, "badinput")
    st = state("badinput")["jobs"]
    bad = [j for j in st if st[j]["state"] == "failed"]
    good = [j for j in st if st[j]["state"] == "completed"]
    assert len(bad) == 1 and len(good) == 1, st
    bad, good = bad[0], good[0]
    # Exit 2 ends the job at once: never retried. Attempted once, unless an attempt before it failed
    # for another reason (seen once in a full ctest -j2: exit 1 0.1 s after the launch, beside a
    # training test; its log is printed so that a cause shows in the test's output): one start line
    # per attempt, a retry line before each but the first, exit 2 the last code and no other.
    codes = st[bad]["exit_codes"]
    assert codes[-1] == 2 and 2 not in codes[:-1] and st[bad]["attempts"] == len(codes), st[bad]
    assert len(codes) <= 2, ("more than one attempt failed before the exit 2", st[bad])
    assert r.stdout.count("start   " + bad) == len(codes), r.stdout
    assert r.stdout.count("retry   " + bad) == len(codes) - 1 and r.stdout.count("retry ") == len(codes) - 1, r.stdout
    if len(codes) > 1:
        with open(os.path.join(run_dir, "logs", bad + ".err"), errors="replace") as f:
            print("note: %d attempts before the exit 2 (%s); the job's log:\n%s" % (len(codes) - 1, codes, f.read()),
                  file=sys.stderr)
    with h5py.File(os.path.join(run_dir, "results", bad + ".h5"), "r") as f:
        assert 1 <= len(f["attempts"]["attempt"]) <= len(codes)
    # The completed job beside it is unaffected.
    assert st[good]["attempts"] == 1 and st[good]["exit_codes"] == [0] and status("badinput", good) == "completed"
    assert "done    " + good + " completed" in r.stdout, r.stdout
    failed_line = [l for l in r.stdout.splitlines() if "failed  " + bad in l]
    assert len(failed_line) == 1, r.stdout
    why = "malformed data file " + os.path.join(missing, "data_batch_1.bin")
    assert (" exit 2: " + why) in failed_line[0], failed_line
    assert ("; see " + os.path.join(run_dir, "logs", bad + ".err")) in failed_line[0], failed_line
    assert "mpirun" not in failed_line[0] and "----" not in failed_line[0], failed_line

    def gridrun(*args):
        p = subprocess.run([GRIDRUN] + list(args), text=True, capture_output=True)
        assert p.returncode == 0, (args, p.stdout, p.stderr)
        return p.stdout

    def check_status():
        rows = {j["id"]: j for j in json.loads(gridrun("status", run_dir, "--format", "json"))["jobs"]}
        assert why in rows[bad]["reason"] and "mpirun" not in rows[bad]["reason"], rows[bad]
        assert rows[good]["reason"] == "", rows[good]
        csv_rows = {c["id"]: c for c in csv.DictReader(io.StringIO(gridrun("status", run_dir, "--format", "csv")))}
        assert csv_rows[bad]["reason"] == rows[bad]["reason"] and csv_rows[good]["reason"] == "", csv_rows
        # The table: one line per job within 100 columns, the long reason cut with an ellipsis.
        table = gridrun("status", run_dir)
        lines = table.splitlines()
        assert all(len(l) <= 100 for l in lines), table
        assert "reason" in lines[1].split(), table
        line = [l for l in lines if l.startswith(bad)][0]
        assert "malformed data file" in line and line.endswith("…"), table
        return rows[bad]["reason"]

    reason = check_status()
    assert reason.startswith(why), reason  # the results file's exit_reason
    # The report: a note under the Jobs table, in the table and in json.
    text = gridrun("report", run_dir)
    assert ("failed " + bad + ": " + why) in text.replace("\n  ", " "), text
    tables = json.loads(gridrun("report", run_dir, "--format", "json"))["tables"]
    notes = [n for t in tables if t["title"].startswith("Jobs") for n in t["notes"]]
    assert ("failed " + bad + ": " + reason) in notes, notes
    # Without its results file (a runner that never wrote one) the reason comes from the log.
    os.remove(os.path.join(run_dir, "results", bad + ".h5"))
    from_log = check_status()
    assert from_log.startswith("rank 0 (") and from_log.endswith(reason), (from_log, reason)


CASES = {
    "quickstart": case_quickstart,
    "kill_rank": case_kill_rank,
    "kill_gridrun": case_kill_gridrun,
    "kill_gridrun_orphans": case_kill_gridrun_orphans,
    "concurrent_and_interrupt": case_concurrent_and_interrupt,
    "large_vs_small_cpu": case_large_vs_small_cpu,
    "phase_sittings": case_phase_sittings,
    "bad_input": case_bad_input,
    "calibrate_predict": case_calibrate_predict,
    "calibrate_loaded": case_calibrate_loaded,
    "failure_reason": case_failure_reason,
}

if __name__ == "__main__":
    CASES[CASE]()
    # A passed case leaves nothing behind; a failed one keeps WORK for the post-mortem.
    shutil.rmtree(WORK, ignore_errors=True)
    print("ok:", CASE)
