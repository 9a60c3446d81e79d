"""/proc helpers shared by the scheduler scenarios (e2e_run.py, e2e_faults.py, e2e_watchdog.py,
e2e_signals.py, e2e_cancel.py): which processes of a run are alive, found by command line, and a
poll with a deadline. (gridrun itself finds its leftovers by the launch token in their
environment, never by command line: e2e_signals.py.)"""
import os
import time


def processes():
    """(pid, comm, cmdline bytes with NULs) of every process that can be read; zombies have an
    empty cmdline, processes that vanish while being read are skipped."""
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % p) as f:
                comm = f.read().strip()
            with open("/proc/%s/cmdline" % p, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        yield int(p), comm, cmd


def ranks_of(job_file):
    """Pids of the gridrun-train ranks of one job (their command line names the job file)."""
    return [p for p, comm, cmd in processes() if comm.startswith("gridrun-train") and job_file.encode() in cmd]


def processes_with(needle):
    """Pids of live processes whose command line contains `needle`."""
    return [p for p, _, cmd in processes() if needle.encode() in cmd]


def poll(what, cond, deadline_s=120, interval_s=0.05):
    """cond() until it returns something truthy, with a deadline (a wait for a state change the
    scenario cannot be told about, never a sleep as synchronisation)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(interval_s)
    raise AssertionError("timed out waiting for " + what)
