"""Damaged files are quarantined, never trusted and never fatal (`gridrun run` with real mpirun and
gridrun-train). Each case damages one kind of file of a real run (result, partial, checkpoint,
state.json, job file), reruns the grid, and asserts the rerun completes with the same losses as an
undisturbed run of the same grid (read back with h5py), the damaged file renamed *.damaged, and
`gridrun status` listing it.

Usage: e2e_faults.py GRIDRUN GRIDRUN_TRAIN CASE
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

from e2e_proc import ranks_of

GRIDRUN, TRAIN, CASE = sys.argv[1:4]
BITFLIP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "bitflip-result.h5")
WORK = tempfile.mkdtemp(prefix="gridrun-e2e-faults-")
OUT = os.path.join(WORK, "runs")
REF = os.path.join(WORK, "reference")
SMALL = """defaults:
  dataset: synthetic
  device: cpu
  threads_per_rank: 1
  train_samples: 256
  test_samples: 64
  batch_per_rank: 32
  lr: 0.05
grid:
  model: [mlp]
"""


def grid(name, epochs, seeds=(1,)):
    path = os.path.join(WORK, name + ".yaml")
    with open(path, "w") as f:
        f.write("name: %s\n%s  epochs: [%d]\nseeds: [%s]\n" % (name, SMALL, epochs, ", ".join(map(str, seeds))))
    return path


def run(g, out=OUT, extra=()):
    return subprocess.run([GRIDRUN, "run", g, "--out", out, "--train-bin", TRAIN, "--no-report"] + list(extra),
                          text=True, capture_output=True)


def start(g, extra=()):
    return subprocess.Popen([GRIDRUN, "run", g, "--out", OUT, "--train-bin", TRAIN, "--no-report"] + list(extra),
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1)


def read_until(proc, needle):
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if needle in line:
            return line
    raise AssertionError("gridrun ended before printing %r:\n%s" % (needle, "".join(seen)))


def job_ids(name, out=OUT):
    with open(os.path.join(out, name, "state.json")) as f:
        return sorted(json.load(f)["jobs"])


def losses(name, jid, out=OUT):
    with h5py.File(os.path.join(out, name, "results", jid + ".h5"), "r") as f:
        a = f.attrs["status"]
        st = a.decode() if isinstance(a, bytes) else str(a)
        return st, np.asarray(f["epochs/train_loss"][:]), np.asarray(f["epochs/test_loss"][:])


def reference(g, name):
    r = run(g, out=REF)
    assert r.returncode == 0, r.stdout + r.stderr
    return {j: losses(name, j, out=REF) for j in job_ids(name, out=REF)}


def assert_same_as(ref, name):
    for j, (st0, tr0, te0) in ref.items():
        st, tr, te = losses(name, j)
        assert st == "completed" == st0, (st, st0)
        assert np.array_equal(tr, tr0) and np.array_equal(te, te0), (j, tr, tr0)


def wait_for_checkpoint(name, jid):
    # A condition with a deadline, not a sleep: the first epoch-end checkpoint folder.
    d = os.path.join(OUT, name, "checkpoints", jid)
    end = time.monotonic() + 120
    while time.monotonic() < end:
        if os.path.isdir(d) and [c for c in os.listdir(d) if "." not in c]:
            return os.path.join(d, [c for c in os.listdir(d) if "." not in c][0])
        time.sleep(0.05)
    raise AssertionError("no checkpoint in " + d)


def status_lists(name, needle):
    r = subprocess.run([GRIDRUN, "status", os.path.join(OUT, name)], text=True, capture_output=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "damaged (quarantined, not used): " in r.stdout and needle in r.stdout, r.stdout


def damage(path, how):
    size = os.path.getsize(path)
    if how == "truncate":
        os.truncate(path, size // 2)
    else:  # corrupt: garbage over the first 4 kB (HDF5 superblock, zip headers)
        with open(path, "r+b") as f:
            f.write(b"\xde\xad\xbe\xef" * 1024)


def case_result():
    g = grid("result", 3)
    ref = reference(g, "result")
    r = run(g)
    assert r.returncode == 0, r.stdout + r.stderr
    (jid,) = job_ids("result")
    h5 = os.path.join(OUT, "result", "results", jid + ".h5")
    damage(h5, "truncate")
    r = run(g)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "is damaged" in r.stdout and os.path.exists(h5 + ".damaged"), r.stdout
    assert "0 already completed, 1 to run" in r.stdout and "(--resume)" not in r.stdout, r.stdout
    assert_same_as(ref, "result")
    status_lists("result", jid + ".h5.damaged")


def interrupted_run(name, how):
    """A 100-epoch job stopped after its first checkpoint, `how`: sigint (checkpoint, exit 75,
    results file final with status interrupted) or kill_rank (no retry: a .partial stays)."""
    g = grid(name, 100)
    ref = reference(g, name)
    extra = ["--retries", "0"] if how == "kill_rank" else []
    p = start(g, extra)
    jid = read_until(p, "start ").split("start ", 1)[1].split()[0]
    ckpt = wait_for_checkpoint(name, jid)
    if how == "sigint":
        p.send_signal(signal.SIGINT)
    else:
        job_file = os.path.join(OUT, name, "jobs", jid + ".json")
        end = time.monotonic() + 60
        while not ranks_of(job_file) and time.monotonic() < end:
            time.sleep(0.05)
        os.kill(ranks_of(job_file)[0], signal.SIGKILL)
    p.communicate(timeout=300)
    assert p.returncode == 1
    # Later checkpoints replaced the first one: a clean stop (sigint) leaves exactly one; a rank
    # killed between a checkpoint's rename into place and the removal of the one before it leaves
    # both. Take the newest (what the trainer resumes from).
    d = os.path.dirname(ckpt)
    whole = [c for c in os.listdir(d) if "." not in c]
    assert len(whole) == 1 or (how == "kill_rank" and len(whole) == 2), whole
    left = max(whole, key=lambda c: int(c.split("-")[-1]))
    return g, ref, jid, os.path.join(d, left)


def case_partial():
    g, ref, jid, _ = interrupted_run("partial", "kill_rank")
    partial = os.path.join(OUT, "partial", "results", jid + ".h5.partial")
    assert os.path.exists(partial)
    damage(partial, "corrupt")
    r = run(g)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "is damaged" in r.stdout and os.path.exists(partial + ".damaged"), r.stdout
    assert "(--resume)" not in r.stdout, r.stdout  # its history is gone: a fresh start
    assert_same_as(ref, "partial")
    status_lists("partial", jid + ".h5.partial.damaged")


def case_checkpoint():
    g, ref, jid, ckpt = interrupted_run("checkpoint", "sigint")
    damage(os.path.join(ckpt, "state.pt"), "truncate")
    r = run(g)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(--resume)" in r.stdout, r.stdout
    with open(os.path.join(OUT, "checkpoint", "logs", jid + ".err")) as f:
        err = f.read()
    assert "is damaged" in err, err
    assert os.path.isdir(ckpt + ".damaged"), os.listdir(os.path.dirname(ckpt))
    assert_same_as(ref, "checkpoint")
    status_lists("checkpoint", os.path.basename(ckpt) + ".damaged")


def case_state_and_job_file():
    g = grid("statejob", 3, seeds=(1, 2))
    ref = reference(g, "statejob")
    # Both jobs complete, then state.json and one job file are damaged; the rerun must not trust
    # them (results files decide what is finished) and must not fail on them.
    r = run(g, extra=["--max-parallel", "1"])
    assert r.returncode == 0, r.stdout + r.stderr
    jids = job_ids("statejob")
    state = os.path.join(OUT, "statejob", "state.json")
    job_file = os.path.join(OUT, "statejob", "jobs", jids[0] + ".json")
    damage(state, "truncate")
    damage(job_file, "corrupt")
    s = subprocess.run([GRIDRUN, "status", os.path.join(OUT, "statejob")], text=True, capture_output=True)
    assert s.returncode == 0 and "state.json" in s.stdout and "damaged" in s.stdout, s.stdout + s.stderr
    r = run(g)
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.path.exists(state + ".damaged") and os.path.exists(job_file + ".damaged"), r.stdout
    assert r.stdout.count("is damaged") == 2, r.stdout
    assert "2 already completed, 0 to run" in r.stdout, r.stdout
    with open(job_file) as f:
        assert json.load(f)["id"] == jids[0]
    assert_same_as(ref, "statejob")
    status_lists("statejob", "state.json.damaged")


def case_bitflip():
    # Issue 24: a result file with a few flipped bytes (tests/data/bitflip-result.h5, a real one from
    # a probe) passes H5Fis_hdf5 and the open, then crashes libhdf5 1.10.8 while listing a group.
    # It must cost one quarantined file, never a command: status, collect and report exit 0 and name
    # it; the rerun quarantines it and completes every job as an undisturbed run would.
    g = grid("bitflip", 2, seeds=(1, 2))
    ref = reference(g, "bitflip")
    r = run(g)
    assert r.returncode == 0, r.stdout + r.stderr
    jid = job_ids("bitflip")[0]
    run_dir = os.path.join(OUT, "bitflip")
    h5 = os.path.join(run_dir, "results", jid + ".h5")
    with open(BITFLIP, "rb") as src, open(h5, "wb") as dst:
        dst.write(src.read())
    for cmd in (["status", run_dir], ["collect", run_dir], ["report", run_dir]):
        r = subprocess.run([GRIDRUN] + cmd, text=True, capture_output=True, timeout=300)
        out = r.stdout + r.stderr
        assert r.returncode == 0, (cmd, r.returncode, out)
        if cmd[0] != "status":  # status reads job states only: the file shows no results
            # the full read (tables too) is the one that crashes libhdf5 in a forked copy
            assert out.count(jid + ".h5") == 1 and "crashed with signal" in out, (cmd, out)
    r = run(g)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "is damaged" in r.stdout and os.path.exists(h5 + ".damaged"), r.stdout
    assert "1 already completed, 1 to run" in r.stdout, r.stdout
    assert_same_as(ref, "bitflip")
    status_lists("bitflip", jid + ".h5.damaged")
    for cmd in (["collect", run_dir], ["report", run_dir]):
        r = subprocess.run([GRIDRUN] + cmd, text=True, capture_output=True, timeout=300)
        assert r.returncode == 0 and "skipped" not in r.stdout + r.stderr, r


CASES = {"result": case_result, "bitflip": case_bitflip, "partial": case_partial, "checkpoint": case_checkpoint,
         "state_and_job_file": case_state_and_job_file}

if __name__ == "__main__":
    CASES[CASE]()
    # A passed case leaves nothing behind; a failed one keeps WORK for the post-mortem.
    shutil.rmtree(WORK, ignore_errors=True)
    print("ok:", CASE)
