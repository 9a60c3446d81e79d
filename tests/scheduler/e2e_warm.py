"""Warm launches (`gridrun run --launch warm`, issue 48) with real mpirun and gridrun-train.

equal: a grid of mixed models (mlp and lenet, 1 and 2 ranks, two seeds) run cold and run warm gives
       bitwise the same per-step losses and epoch figures (read back with h5py); the warm run did
       reuse workers (start lines say "(warm)", /summary launch_warm is 1 for those jobs and they
       loaded no library); nothing of either run is left running, and no worker folder is left.
kill:  a kill -9 of a warm worker's rank in the middle of its second job: that job is retried cold
       from its checkpoint (not counted against --retries 0), completes with the losses of an
       undisturbed cold run, and nothing is left running.
forged: (issue 57) a done line written into a busy warm worker's done pipe by another process, for
       the job it runs but without its ticket; then, in a fresh worker's first job, 60 KiB without a
       line end: each time the worker is retired and killed, its job is retried cold from its
       checkpoint (not counted against --retries 0) and ends with an undisturbed cold run's losses;
       the run names the pipe and what was wrong; nothing is left running.
resume: two long jobs side by side are stopped (Ctrl-C) after a checkpoint each; the rerun with
       --launch warm resumes the first in a new worker and the second in that warm worker
       (--resume through the control channel); both end with an undisturbed cold run's losses.

Usage: e2e_warm.py GRIDRUN GRIDRUN_TRAIN CASE
"""
import json
import os
import signal
import subprocess
import sys
import tempfile

import h5py
import numpy as np

from e2e_proc import poll, processes

GRIDRUN, TRAIN, CASE = sys.argv[1:4]
WORK = tempfile.mkdtemp(prefix="gridrun-e2e-warm-")
SMALL = """defaults:
  dataset: synthetic
  device: cpu
  threads_per_rank: 1
  train_samples: 256
  test_samples: 64
  batch_per_rank: 32
  lr: 0.05
"""


def grid(name, body):
    path = os.path.join(WORK, name + ".yaml")
    with open(path, "w") as f:
        f.write("name: %s\n%s%s" % (name, SMALL, body))
    return path


def command(g, out, launch, extra=()):
    return [GRIDRUN, "run", g, "--out", out, "--train-bin", TRAIN, "--no-report", "--launch", launch,
            "--max-parallel", "1"] + list(extra)


def run(g, out, launch, extra=()):
    r = subprocess.run(command(g, out, launch, extra), text=True, capture_output=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def job_ids(run_dir):
    with open(os.path.join(run_dir, "state.json")) as f:
        return sorted(json.load(f)["jobs"])


def read(run_dir, jid):
    with h5py.File(os.path.join(run_dir, "results", jid + ".h5"), "r") as f:
        a = f.attrs["status"]
        status = a.decode() if isinstance(a, bytes) else str(a)
        summary = {k: float(f["summary"][k][0]) for k in f["summary"] if k != "rows"}
        return (status, np.asarray(f["steps/loss"][:]), np.asarray(f["epochs/train_loss"][:]),
                np.asarray(f["epochs/test_loss"][:]), summary)


def trainers_of(run_dir):
    """Live gridrun-train processes (and their mpirun) that work for `run_dir`."""
    return [p for p, comm, cmd in processes()
            if comm in ("gridrun-train", "mpirun") and run_dir.encode() in cmd]


def assert_nothing_left(run_dir):
    left = trainers_of(run_dir)
    assert not left, "left running: %s" % left
    workers = os.path.join(run_dir, "workers")
    assert not os.path.isdir(workers) or not os.listdir(workers), os.listdir(workers)


def checkpoints(run_dir, jid):
    """The job's complete checkpoint folders (ckpt-<step>; a folder being written has a dot)."""
    d = os.path.join(run_dir, "checkpoints", jid)
    return [c for c in os.listdir(d) if "." not in c] if os.path.isdir(d) else []


def assert_same(cold_dir, warm_dir, jid):
    c, w = read(cold_dir, jid), read(warm_dir, jid)
    assert c[0] == w[0] == "completed", (jid, c[0], w[0])
    for a, b, what in zip(c[1:4], w[1:4], ("steps/loss", "epochs/train_loss", "epochs/test_loss")):
        assert a.shape == b.shape and a.size > 0 and np.array_equal(a, b), (jid, what, a, b)
    return c[4], w[4]


def with_reference(name, body):
    """The grid `name`, run undisturbed and cold into WORK/ref; returns the grid file, that run's
    directory, and the folder and run directory the case runs into."""
    g = grid(name, body)
    run(g, os.path.join(WORK, "ref"), "cold")
    out = os.path.join(WORK, "runs")
    return g, os.path.join(WORK, "ref", name), out, os.path.join(out, name)


def assert_as_reference(ref_dir, run_dir):
    for jid in job_ids(ref_dir):
        assert_same(ref_dir, run_dir, jid)


def case_equal():
    g = grid("mixed", "  epochs: 2\ngrid:\n  model: [mlp, lenet]\n  ranks: [1, 2]\n  seed: [1, 2]\n")
    cold, warm = os.path.join(WORK, "cold"), os.path.join(WORK, "warm")
    run(g, cold, "cold")
    r = run(g, warm, "warm")
    ids = job_ids(os.path.join(cold, "mixed"))
    assert len(ids) == 8 and ids == job_ids(os.path.join(warm, "mixed")), ids
    warm_jobs = 0
    for jid in ids:
        sc, sw = assert_same(os.path.join(cold, "mixed"), os.path.join(warm, "mixed"), jid)
        assert sc.get("launch_warm") == 0.0, (jid, sc)
        if sw.get("launch_warm") == 1.0:
            warm_jobs += 1
            assert sw["time_load_s"] == 0.0, (jid, sw)
    # Two seeds of each (model, ranks): the second of each pair can run in the first one's worker.
    assert warm_jobs >= 1, r.stdout
    assert r.stdout.count("(warm)") == warm_jobs, r.stdout
    for d in (cold, warm):
        assert_nothing_left(os.path.join(d, "mixed"))


def case_kill():
    g, ref_dir, out, run_dir = with_reference("killwarm", "  model: mlp\ngrid:\n  epochs: [1, 100]\n")
    p = subprocess.Popen(command(g, out, "warm", ["--retries", "0"]),
                         text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1)
    seen = []
    long_id = None
    for line in p.stdout:
        seen.append(line)
        if line.startswith("[") and " start " in line and "(warm)" in line:
            long_id = line.split(" start ", 1)[1].split()[0]
            break
    assert long_id, "no job started warm:\n" + "".join(seen)
    poll("a checkpoint of " + long_id, lambda: checkpoints(run_dir, long_id))
    ranks = [q for q, comm, cmd in processes()
             if comm == "gridrun-train" and b"--worker" in cmd and run_dir.encode() in cmd]
    assert ranks, "no warm worker rank found"
    os.kill(ranks[0], signal.SIGKILL)
    rest, err = p.communicate(timeout=300)
    text = "".join(seen) + rest
    assert p.returncode == 0, text + err
    assert "retry   " + long_id in text and "in a warm worker; again cold (--resume)" in text, text
    assert_as_reference(ref_dir, run_dir)
    assert_nothing_left(run_dir)


def forge(run_dir, worker, data, note):
    """Writes `data` into the done pipe of workers/`worker` as another process of the user would."""
    pipe = os.path.join(run_dir, "workers", worker, "done")
    # The launcher holds the pipe open for reading, so this open does not block; the data fit the
    # pipe's buffer (64 KiB), so neither does the write.
    fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
    try:
        assert os.write(fd, data) == len(data), note
    finally:
        os.close(fd)


def wait_start(p, seen, want_warm):
    """Reads the run's output up to a job's start line ("(warm)" in it or not); returns its id."""
    for line in p.stdout:
        seen.append(line)
        if line.startswith("[") and " start " in line and ("(warm)" in line) == want_warm:
            return line.split(" start ", 1)[1].split()[0]
    raise AssertionError("no job started %s:\n%s" % ("warm" if want_warm else "cold", "".join(seen)))


def case_forged():
    # A forged done line for the job a reused worker runs (the finding: it was believed, and the
    # worker was handed the next job while busy).
    g, ref_dir, out, run_dir = with_reference("forgedwarm", "  model: mlp\ngrid:\n  epochs: [1, 100]\n")
    p = subprocess.Popen(command(g, out, "warm", ["--retries", "0"]),
                         text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1)
    seen = []
    long_id = wait_start(p, seen, True)
    poll("a checkpoint of " + long_id, lambda: checkpoints(run_dir, long_id))
    ranks = [q for q, comm, cmd in processes()
             if comm == "gridrun-train" and b"--worker" in cmd and run_dir.encode() in cmd]
    line = json.dumps({"job": long_id, "code": 0, "rss_bytes": 0, "retiring": False, "ticket": "0" * 32,
                       "pid": ranks[0] if ranks else 0}) + "\n"
    forge(run_dir, "w1", line.encode(), "forged line")
    rest, err = p.communicate(timeout=300)
    text = "".join(seen) + rest
    assert p.returncode == 0, text + err
    assert ("retry   %s exit 137: worker w1's done pipe: a done message without the ticket of the worker's job, "
            "in a warm worker; again cold (--resume)" % long_id) in text, text
    assert text.count("retry ") == 1 and "finished: 2/2 completed" in text, text
    assert_as_reference(ref_dir, run_dir)
    assert_nothing_left(run_dir)

    # 60 KiB without a line end in the done pipe of a new worker's first job (the finding: 49 MiB
    # were buffered whole, and the job stalled until the watchdog's grace ended it).
    g, ref_dir, out, run_dir = with_reference("longwarm", "  model: mlp\n  epochs: 100\n")
    p = subprocess.Popen(command(g, out, "warm", ["--retries", "0"]),
                         text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1)
    seen = []
    jid = wait_start(p, seen, False)
    poll("a checkpoint of " + jid, lambda: checkpoints(run_dir, jid))
    forge(run_dir, "w1", b"x" * (60 * 1024), "60 KiB without a line end")
    rest, err = p.communicate(timeout=300)
    text = "".join(seen) + rest
    assert p.returncode == 0, text + err
    assert ("retry   %s exit 137: worker w1's done pipe: a message longer than 4096 bytes without a line end, "
            "in a warm worker; again cold (--resume)" % jid) in text, text
    assert "finished: 1/1 completed" in text, text
    assert_as_reference(ref_dir, run_dir)
    assert_nothing_left(run_dir)


def case_resume():
    g, ref_dir, out, run_dir = with_reference("resumewarm", "  model: mlp\n  epochs: 100\ngrid:\n  seed: [1, 2]\n")
    cmd = command(g, out, "cold")
    cmd[cmd.index("--max-parallel") + 1] = "2"
    p = subprocess.Popen(cmd, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ids = job_ids(ref_dir)

    poll("a checkpoint of both jobs", lambda: all(checkpoints(run_dir, j) for j in ids))
    p.send_signal(signal.SIGINT)
    text, err = p.communicate(timeout=300)
    assert p.returncode == 1 and "interrupted" in text, text + err
    r = run(g, out, "warm")
    starts = [l for l in r.stdout.splitlines() if " start " in l]
    assert len(starts) == 2 and all("(--resume)" in l for l in starts), r.stdout
    assert "(warm)" not in starts[0] and "(warm)" in starts[1], r.stdout
    assert_as_reference(ref_dir, run_dir)
    assert_nothing_left(run_dir)


{"equal": case_equal, "kill": case_kill, "forged": case_forged, "resume": case_resume}[CASE]()
print("ok", CASE)
