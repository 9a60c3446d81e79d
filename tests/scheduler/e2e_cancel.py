"""`gridrun status` and `gridrun cancel` of a local run, with the real binaries.

Usage: e2e_cancel.py GRIDRUN GRIDRUN_TRAIN CASE
status_cancel: a run of two jobs (they differ in lr) long enough to watch; `gridrun status --format
json` at two step counts shows the step growing, a finite ETA and the varying parameter; `gridrun
cancel` stops the run within its time limit (exit 0, the jobs recorded interrupted, no gridrun,
mpirun or gridrun-train process of the run left), and the next `gridrun run` resumes both to
completion. Then a lock held on another host (exit 2) and a holder that does not stop (exit 1 at
the time limit).
live_progress: one job in one long epoch (its results file is flushed at epoch ends and every 30 s):
`gridrun status` shows steps beyond the rows its results file holds, read from the job's progress
file (run/progress.hpp), with a finite ETA; after `gridrun cancel` the interrupted job shows the
step where it stopped, as its progress file and results file say. Synchronisation is by polling the files and commands for a condition with a
deadline, never by sleeping for a fixed time.
"""
import csv
import fcntl
import io
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import e2e_proc
from e2e_proc import processes_with

GRIDRUN, TRAIN, CASE = sys.argv[1:4]
WORK = tempfile.mkdtemp(prefix="gridrun-e2e-cancel-")
OUT = os.path.join(WORK, "runs")
# 512 samples / batch 32: 3,200 steps, 15-40 s on one core, while the watching and the cancel before
# the resume take 2-5 s; the resume runs the rest of the steps to completion.
EPOCHS, STEPS_PER_EPOCH = 200, 16

GRID = """name: watched
defaults:
  dataset: synthetic
  model: mlp
  device: cpu
  threads_per_rank: 1
  train_samples: 512
  test_samples: 128
  batch_per_rank: 32
  eval_every: 0
  epochs: %d
grid:
  lr: [0.05, 0.02]
""" % EPOCHS


def gridrun(*args, **kw):
    return subprocess.run([GRIDRUN] + list(args), text=True, capture_output=True, **kw)


def status_json(run_dir):
    r = gridrun("status", run_dir, "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def poll(what, cond, deadline_s=180):
    return e2e_proc.poll(what, cond, deadline_s, 0.2)


def state(run_dir):
    with open(os.path.join(run_dir, "state.json")) as f:
        return json.load(f)["jobs"]


def alive(pid):
    """A live process (a zombie, exited but not yet reaped, is not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def case_status_cancel():
    g = os.path.join(WORK, "watched.yaml")
    with open(g, "w") as f:
        f.write(GRID)
    run_dir = os.path.join(OUT, "watched")
    p = subprocess.Popen([GRIDRUN, "run", g, "--out", OUT, "--train-bin", TRAIN, "--no-report"], text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        # Both jobs running with rows in their live results files.
        def both_stepping():
            assert p.poll() is None, "gridrun run ended early:\n" + p.stdout.read()
            if not os.path.exists(os.path.join(run_dir, "state.json")):
                return None  # not prepared yet
            st = status_json(run_dir)
            jobs = st["jobs"]
            ok = len(jobs) == 2 and all(j["state"] == "running" and (j["step"] or 0) >= 1 for j in jobs)
            return st if ok else None

        first = poll("two running jobs with steps", both_stepping)
        assert first["varying"] == ["lr"], first["varying"]
        assert sorted(j["params"]["lr"] for j in first["jobs"]) == ["0.02", "0.05"], first["jobs"]
        jid = first["jobs"][0]["id"]
        s1 = first["jobs"][0]["step"]

        def grown():
            st = status_json(run_dir)
            j = [x for x in st["jobs"] if x["id"] == jid][0]
            return j if j["step"] > s1 and isinstance(j["eta_s"], (int, float)) else None

        j = poll("the step of %s to grow past %d with an ETA" % (jid, s1), grown)
        assert j["total_steps"] == EPOCHS * STEPS_PER_EPOCH and j["total_epochs"] == EPOCHS, j
        assert 1 <= j["epoch"] <= EPOCHS and j["step"] < j["total_steps"], j
        assert math.isfinite(j["eta_s"]) and j["eta_s"] > 0 and j["eta_source"] == "progress", j
        assert j["elapsed_s"] > 0 and j["elapsed"] not in ("", None), j
        # The table names the parameter and the progress; csv has the new fields.
        table = gridrun("status", run_dir)
        assert table.returncode == 0, table.stderr
        head = table.stdout.splitlines()[1].split()
        for col in ("id", "lr", "state", "step", "eta"):
            assert col in head, table.stdout
        rows = list(csv.DictReader(io.StringIO(gridrun("status", run_dir, "--format", "csv").stdout)))
        assert len(rows) == 2 and all(int(r["step"]) >= 1 and r["lr"] for r in rows), rows
        assert all(float(r["eta_s"]) > 0 and float(r["elapsed_s"]) > 0 for r in rows), rows

        # Cancel: the holder checkpoints its jobs, stops and lets go of the run within the limit.
        t0 = time.monotonic()
        c = gridrun("cancel", run_dir, "--timeout", "120", timeout=200)
        took = time.monotonic() - t0
        assert c.returncode == 0, c.stdout + c.stderr
        assert took < 120, took
        assert "stopped run" in c.stdout and "2 jobs interrupted" in c.stdout, c.stdout
        assert "resumable with:" in c.stdout and "gridrun run" in c.stdout, c.stdout
        assert not alive(p.pid), "gridrun run still alive after cancel"
        out = p.communicate(timeout=60)[0]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 1 and "interrupted:" in out, out
    # Nothing of the run is left: no mpirun, no gridrun-train (their command lines name the job files).
    job_files = [os.path.join(os.path.abspath(run_dir), "jobs", jid + ".json") for jid in state(run_dir)]
    left = [q for f in job_files for q in processes_with(f) if alive(q)]
    assert not left, "processes of the run still alive: %s" % left
    recs = state(run_dir)
    assert all(r["state"] == "interrupted" and r["exit_codes"] == [75] for r in recs.values()), recs

    # Nothing runs any more: cancel says so and exits 0; status --watch into a pipe prints once, plain.
    again = gridrun("cancel", run_dir)
    assert again.returncode == 0 and "queued or running" in again.stdout, again.stdout + again.stderr
    w = gridrun("status", run_dir, "--watch", "--interval", "0.2", timeout=60)
    assert w.returncode == 0 and "\033" not in w.stdout and w.stdout.count("run watched") == 1, w.stdout

    # The next run resumes both from their checkpoints to completion.
    r = subprocess.run([GRIDRUN, "run", g, "--out", OUT, "--train-bin", TRAIN, "--no-report"], text=True,
                       capture_output=True, timeout=500)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("(--resume)") == 2, r.stdout
    assert all(x["state"] == "completed" for x in state(run_dir).values()), state(run_dir)
    done = status_json(run_dir)
    assert all(x["eta_s"] is None and x["step"] is None for x in done["jobs"]), done["jobs"]

    # A lock held on another host: not ours to signal (exit 2, names the host).
    lock = os.path.join(run_dir, "lock")
    with open(lock, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write("4242\nelsewhere.example\n")
        f.flush()
        o = gridrun("cancel", run_dir)
        assert o.returncode == 2 and "elsewhere.example" in o.stdout, o.stdout + o.stderr
        fcntl.flock(f, fcntl.LOCK_UN)
        f.truncate(0)

    # A holder that does not stop (it ignores SIGTERM): exit 1 at the time limit. The holder is a
    # python named gridrun-* that holds the lock itself and records its start as gridrun does
    # (cancel only signals the verified holder: e2e_signals.py forged_lock).
    holder_exe = os.path.join(WORK, "gridrun-holder")
    os.symlink(sys.executable, holder_exe)
    code = ("import fcntl,os,signal,socket,sys,time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "f=open(sys.argv[1],'w'); fcntl.flock(f, fcntl.LOCK_EX)\n"
            "t=open('/proc/self/stat').read().rsplit(')',1)[1].split()[19]\n"
            "f.write('%d\\n%s\\n%s\\n' % (os.getpid(), socket.gethostname(), t)); f.flush()\n"
            "print('ready', flush=True)\n"
            "sys.stdin.read()\n")
    h = subprocess.Popen([holder_exe, "-c", code, lock], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert h.stdout.readline().strip() == "ready"
        t = gridrun("cancel", run_dir, "--timeout", "1", timeout=60)
        assert t.returncode == 1 and "still runs after" in t.stdout, t.stdout + t.stderr
        assert h.poll() is None
    finally:
        h.kill()
        h.wait()


def rows_in_file(run_dir, jid):
    """The steps the job's results file shows a reader now (its live .partial, SWMR)."""
    import h5py
    for name in (jid + ".h5.partial", jid + ".h5"):
        path = os.path.join(run_dir, "results", name)
        if not os.path.exists(path):
            continue
        try:
            with h5py.File(path, "r", libver="latest", swmr=True) as f:
                return int(f["steps/step"][-1]) if f["steps/step"].shape[0] else 0
        except (OSError, KeyError):
            return 0
    return 0


def case_live_progress():
    g = os.path.join(WORK, "live.yaml")
    with open(g, "w") as f:
        # One epoch of 400 resnet18 steps: minutes on a CPU core, and no epoch end to flush rows.
        f.write(GRID.replace("name: watched", "name: live").replace("epochs: %d" % EPOCHS, "epochs: 1")
                .replace("model: mlp", "model: resnet18").replace("train_samples: 512", "train_samples: 12800")
                .replace("grid:\n  lr: [0.05, 0.02]\n", ""))
    run_dir = os.path.join(OUT, "live")
    p = subprocess.Popen([GRIDRUN, "run", g, "--out", OUT, "--train-bin", TRAIN, "--no-report"], text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        def ahead_of_file():
            assert p.poll() is None, "gridrun run ended early:\n" + p.stdout.read()
            if not os.path.exists(os.path.join(run_dir, "state.json")):
                return None
            (j,) = status_json(run_dir)["jobs"]
            if j["state"] != "running" or not j["step"]:
                return None
            # Read after status: a file flushed in between can only hold more rows, not fewer.
            return j if j["step"] > rows_in_file(run_dir, j["id"]) else None

        j = poll("status to show a step beyond the results file's rows", ahead_of_file, deadline_s=120)
        assert j["total_steps"] == 400 and j["epoch"] == 1 and j["total_epochs"] == 1, j
        assert math.isfinite(j["eta_s"]) and j["eta_s"] > 0 and j["eta_source"] == "progress", j
        c = gridrun("cancel", run_dir, "--timeout", "120", timeout=200)
        assert c.returncode == 0, c.stdout + c.stderr
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    (after,) = status_json(run_dir)["jobs"]
    assert after["state"] == "interrupted", after
    with open(os.path.join(run_dir, "logs", after["id"] + ".out.heartbeat")) as f:
        live = json.load(f)
    assert after["step"] == live["step"] >= j["step"], (after, live, j)
    assert after["step"] >= rows_in_file(run_dir, after["id"]), after
    assert after["eta_s"] is None, after  # not running: no ETA


if __name__ == "__main__":
    {"status_cancel": case_status_cancel, "live_progress": case_live_progress}[CASE]()
    print("ok", CASE)
