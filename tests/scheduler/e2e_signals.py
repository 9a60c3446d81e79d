"""Whom gridrun signals, with the real binaries (issue 45): only processes it started and can prove
it started.

Usage: e2e_signals.py GRIDRUN GRIDRUN_TRAIN CASE
leftovers: a `gridrun run` is SIGKILLed while its mpirun and ranks are stopped (SIGSTOP: they
cannot see their owner go, so they stay as real leftovers). Beside them run strangers that name
the job file in their arguments (`tail -f JOB`, `python3 -c ... --config=JOB`, `sh -c ... JOB`) or
carry a wrong launch token, the right token for another run directory, or (as root) the right
token and directory in another user's process. The next `gridrun run` of the run directory must
stop exactly the leftovers (SIGTERM pending on each stopped rank, none on mpirun), resume the job
to completion, and leave every stranger running.
forged_lock: `gridrun cancel` with a lock held by `flock RUN/lock ...` and a lock file that names
a dummy process called gridrun-dummy (with its true start time, with a wrong one, in the older
format, with the lock file open but not locked) or the lock's real holder that is not a gridrun:
each refused with exit 2 and nothing signalled. Then a gridrun-named process that holds the lock
itself is stopped (exit 0): the checks refuse forgeries, not every holder.
Synchronisation is by reading lines from pipes, or polling a condition with a deadline.
"""
import ctypes
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

from e2e_proc import poll, processes, ranks_of

GRIDRUN, TRAIN, CASE = sys.argv[1:4]
WORK = tempfile.mkdtemp(prefix="gridrun-e2e-signals-")
OUT = os.path.join(WORK, "runs")
SIGTERM_BIT = 1 << (signal.SIGTERM - 1)
PR_SET_CHILD_SUBREAPER = 36


def read_until(proc, needle, lines):
    for line in proc.stdout:
        lines.append(line)
        if needle in line:
            return line
    raise AssertionError("gridrun ended before printing %r:\n%s" % (needle, "".join(lines)))


def environ(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def start_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def pending(pid):
    """The signals pending for the whole process (ShdPnd), as a bit mask."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("ShdPnd:"):
                return int(line.split()[1], 16)
    return 0


def ready_line(argv, **kw):
    """Starts argv (a shell that prints 'ready' once set up) and waits for that line."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True, **kw)
    assert p.stdout.readline().strip() == "ready", argv
    return p


def stop_all(procs):
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def case_leftovers():
    grid = os.path.join(WORK, "left.yaml")
    with open(grid, "w") as f:
        f.write("name: left\ndefaults:\n  dataset: synthetic\n  device: cpu\n  threads_per_rank: 1\n"
                "  train_samples: 512\n  test_samples: 128\n  batch_per_rank: 32\n  lr: 0.05\n"
                "  epochs: 100\ngrid:\n  model: [mlp]\n  ranks: [2]\n")
    run_dir = os.path.realpath(os.path.join(OUT, "left"))
    # Cold: the leftovers are one job's mpirun and ranks, as a cold launch makes them (a warm
    # worker's, killed and resumed, is scheduler_e2e_warm_resume's).
    cmd = [GRIDRUN, "run", grid, "--out", OUT, "--train-bin", TRAIN, "--no-report", "--launch", "cold"]
    p = subprocess.Popen(cmd, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=1)
    lines = []
    jid = read_until(p, "start ", lines).split("start ", 1)[1].split()[0]
    job_file = os.path.join(run_dir, "jobs", jid + ".json")
    ckpts = os.path.join(run_dir, "checkpoints", jid)
    # Two ranks with a first checkpoint, so the resume below has one to start from.
    ranks = poll("two ranks", lambda: (lambda r: r if len(r) == 2 else None)(ranks_of(job_file)))
    poll("a checkpoint", lambda: os.path.isdir(ckpts) and [c for c in os.listdir(ckpts) if "." not in c])
    token_file = os.path.join(run_dir, "launch-token")
    assert os.stat(token_file).st_mode & 0o777 == 0o600, oct(os.stat(token_file).st_mode)
    with open(token_file) as f:
        token = f.read().strip()
    assert len(token) == 32, token
    mine = [b"GRIDRUN_RUN_TOKEN=" + token.encode(), b"GRIDRUN_RUN_DIR=" + run_dir.encode()]
    mpirun = {int(open("/proc/%d/stat" % r).read().rsplit(")", 1)[1].split()[1]) for r in ranks}
    assert len(mpirun) == 1, mpirun
    mpirun = mpirun.pop()
    for q in ranks + [mpirun]:
        assert all(e in environ(q) for e in mine), (q, environ(q))
    # What the kernel holds as this run's (our uid, the token and the directory): mpirun and ranks.
    tagged = sorted(q for q, _, _ in processes() if all(e in environ(q) for e in mine))
    assert tagged == sorted(ranks + [mpirun]), (tagged, ranks, mpirun)

    # Strangers: each prints "ready" once it runs as it will stay.
    env = dict(os.environ)
    strangers = {
        "tail -f JOB": ready_line(["sh", "-c", "echo ready; exec tail -f \"$0\"", job_file]),
        "python --config=JOB": ready_line([sys.executable, "-c", "import sys; print('ready', flush=True); "
                                           "sys.stdin.read()", "--config=" + job_file], stdin=subprocess.PIPE),
        "sh ... JOB": ready_line(["sh", "-c", "echo ready; sleep 1000; :", job_file]),
        "wrong token": ready_line(["sh", "-c", "echo ready; sleep 1000; :", job_file],
                                  env=dict(env, GRIDRUN_RUN_TOKEN="0" * 32, GRIDRUN_RUN_DIR=run_dir)),
        "token of another directory": ready_line(["sh", "-c", "echo ready; sleep 1000; :"],
                                                 env=dict(env, GRIDRUN_RUN_TOKEN=token,
                                                          GRIDRUN_RUN_DIR=run_dir + "-copy")),
    }
    if os.geteuid() == 0 and shutil.which("setpriv"):
        strangers["another user with the token"] = ready_line(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c",
             "echo ready; sleep 1000; :", job_file], env=dict(env, GRIDRUN_RUN_TOKEN=token, GRIDRUN_RUN_DIR=run_dir))
    try:
        # Real leftovers: stopped, they cannot notice their owner go (--owner-pid), so they stay.
        # This process adopts them when gridrun dies (a subreaper), so that mpirun's process group
        # is not orphaned: the kernel would send an orphaned group with stopped members SIGHUP and
        # SIGCONT.
        assert ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        for q in [mpirun] + ranks:
            os.kill(q, signal.SIGSTOP)
        poll("mpirun and ranks stopped", lambda: all(
            open("/proc/%d/stat" % q).read().rsplit(")", 1)[1].split()[0] == "T" for q in [mpirun] + ranks))
        p.kill()
        p.wait()

        again = subprocess.Popen(cmd, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=1)
        lines2 = []
        line = read_until(again, "reconcile: ", lines2)
        assert "reconcile: 3 processes of an earlier gridrun" in line, line
        # It signalled the ranks (pending while they are stopped) and not mpirun, and nothing else.
        poll("SIGTERM pending on both ranks", lambda: all(pending(r) & SIGTERM_BIT for r in ranks))
        assert not pending(mpirun) & SIGTERM_BIT, hex(pending(mpirun))
        for q in [mpirun] + ranks:
            os.kill(q, signal.SIGCONT)
        out = "".join(lines2) + again.communicate(timeout=600)[0]
        assert again.returncode == 0, out
        assert "(--resume)" in out and "finished: 1/1 completed" in out, out
        # This sitting's token is a new one.
        with open(token_file) as f:
            assert f.read().strip() not in ("", token)
        for what, s in strangers.items():
            assert s.poll() is None, "%s was ended (exit %s) by gridrun run" % (what, s.returncode)
        assert os.waitpid(mpirun, 0)[1] == 75 << 8  # adopted: it exited as its ranks did
    finally:
        stop_all(strangers.values())
        if p.poll() is None:
            p.kill()
            p.wait()


def case_forged_lock():
    run_dir = os.path.join(OUT, "forged")
    os.makedirs(run_dir)
    lock = os.path.join(run_dir, "lock")
    open(lock, "w").close()
    host = socket.gethostname()
    dummy_exe = os.path.join(WORK, "gridrun-dummy")
    shutil.copy(shutil.which("sleep"), dummy_exe)
    # The lock's real holder: flock(1), which runs a shell that says it holds it.
    holder = ready_line(["flock", lock, "sh", "-c", "echo ready; exec sleep 1000"])
    with open("/proc/%d/task/%d/children" % (holder.pid, holder.pid)) as f:
        sleeper = [int(c) for c in f.read().split()]
    assert len(sleeper) == 1, sleeper
    sleeper = sleeper[0]
    poll("flock's child to be sleep", lambda: open("/proc/%d/comm" % sleeper).read().strip() == "sleep")
    dummy = ready_line(["sh", "-c", "echo ready; exec \"$0\" 1000", dummy_exe])
    # The same, with the lock file open (fd 3) but not locked.
    opener = ready_line(["sh", "-c", "exec 3<\"$1\"; echo ready; exec \"$0\" 1000", dummy_exe, lock])
    victims = {"gridrun-dummy": dummy, "gridrun-dummy with the lock open": opener, "flock": holder}
    try:
        poll("gridrun-dummy named", lambda: all(
            open("/proc/%d/comm" % v.pid).read().strip() == "gridrun-dummy" for v in (dummy, opener)))
        cases = [
            ("%d\n%s\n%d\n" % (dummy.pid, host, start_ticks(dummy.pid)), "does not hold the lock itself"),
            ("%d\n%s\n%d\n" % (opener.pid, host, start_ticks(opener.pid)), "does not hold the lock itself"),
            ("%d\n%s\n%d\n" % (dummy.pid, host, start_ticks(dummy.pid) + 1), "started at another time"),
            ("%d\n%s\n" % (dummy.pid, host), "records no host or start time"),
            ("%d\n" % dummy.pid, "records no host or start time"),
            # sleep shares flock's open file: it holds the lock, but it is no gridrun.
            ("%d\n%s\n%d\n" % (sleeper, host, start_ticks(sleeper)), "is 'sleep', not a gridrun"),
            ("999999999\n%s\n1\n" % host, "does not exist here"),
        ]
        for text, why in cases:
            with open(lock, "r+") as f:  # flock is advisory: the forger writes past it
                f.truncate(0)
                f.write(text)
            c = subprocess.run([GRIDRUN, "cancel", run_dir, "--timeout", "5"], text=True, capture_output=True,
                               timeout=60)
            assert c.returncode == 2, (text, c.returncode, c.stdout, c.stderr)
            assert "refused" in c.stdout and why in c.stdout and "signalled nothing" in c.stdout, (text, c.stdout)
            for what, v in victims.items():
                assert v.poll() is None, "%s was ended (exit %s) by cancel of %r" % (what, v.returncode, text)
            assert os.path.exists("/proc/%d" % sleeper), "the lock holder's sleep was ended"
    finally:
        stop_all(victims.values())

    # Positive control: a gridrun-named process that holds the lock itself and records its own start.
    holder_exe = os.path.join(WORK, "gridrun-holder")
    os.symlink(sys.executable, holder_exe)
    code = ("import fcntl,os,socket,sys\n"
            "f=open(sys.argv[1],'w'); fcntl.flock(f, fcntl.LOCK_EX)\n"
            "t=open('/proc/self/stat').read().rsplit(')',1)[1].split()[19]\n"
            "f.write('%d\\n%s\\n%s\\n' % (os.getpid(), socket.gethostname(), t)); f.flush()\n"
            "print('ready', flush=True)\n"
            "sys.stdin.read()\n")
    h = subprocess.Popen([holder_exe, "-c", code, lock], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert h.stdout.readline().strip() == "ready"
        c = subprocess.run([GRIDRUN, "cancel", run_dir, "--timeout", "60"], text=True, capture_output=True,
                           timeout=120)
        assert c.returncode == 0 and "stopped run" in c.stdout, (c.returncode, c.stdout, c.stderr)
        assert h.wait(timeout=60) == -signal.SIGTERM, h.returncode
    finally:
        if h.poll() is None:
            h.kill()
            h.wait()
    with open(lock, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody holds it any more


if __name__ == "__main__":
    try:
        {"leftovers": case_leftovers, "forged_lock": case_forged_lock}[CASE]()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    print("ok", CASE)
