"""Scenarios of `gridrun run`'s watchdog and of GPU sharing, with real mpirun and gridrun-train.

Usage: e2e_watchdog.py GRIDRUN GRIDRUN_TRAIN CASE
- lingering: the trainer finishes its results file, then never exits (what hung `gridrun run` on
  the H100). The run must end the job after --exit-grace, record it completed with a warning,
  and leave no process behind.
- heartbeat: rank 0 stops in the middle of training (--hang-at-step). The run must end the job
  once its heartbeat is older than --heartbeat-timeout, record it failed with that reason, and
  leave no process behind.
- gpu_share (needs a GPU; exits 77 otherwise): four lenet jobs with jobs_per_gpu=4 run side by
  side on one GPU and four with jobs_per_gpu=1 one at a time (compare.by jobs_per_gpu); all
  complete, four were live at once, and the phase figures (aggregate samples/s) are printed.
The fake trainers are shell wrappers around the real gridrun-train; nothing here waits on a sleep.
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

from e2e_proc import processes

GRIDRUN, TRAIN, CASE = sys.argv[1:4]
WORK = tempfile.mkdtemp(prefix="gridrun-e2e-watchdog-")
OUT = os.path.join(WORK, "runs")
MARK = "gridrun-watchdog-" + os.path.basename(WORK)  # names this test's lingering processes

BASE = """defaults:
  model: mlp
  dataset: synthetic
  device: cpu
  train_samples: 512
  test_samples: 64
  batch_per_rank: 32
  lr: 0.01
"""


def write(name, text, mode=0o644):
    path = os.path.join(WORK, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def wrapper(name, body):
    return write(name, "#!/bin/bash\nREAL=%s\n%s\n" % (TRAIN, body), 0o755)


def run(grid, train, *flags):
    # Cold: a wrapper script as the trainer, and the processes it leaves, are one job's own (a warm
    # worker takes only its ranks' own messages: scheduler_e2e_warm_forged).
    r = subprocess.run([GRIDRUN, "run", grid, "--out", OUT, "--train-bin", train, "--no-report", "--launch", "cold",
                        *flags], text=True, capture_output=True, timeout=600)
    if r.returncode != 0:  # the jobs' own words, for whoever reads a failure
        for root, _, files in os.walk(OUT):
            for f in files:
                if f.endswith(".err"):
                    with open(os.path.join(root, f)) as fh:
                        sys.stderr.write("--- %s\n%s\n" % (f, fh.read()[-1500:]))
    return r


def state(name):
    with open(os.path.join(OUT, name, "state.json")) as f:
        return json.load(f)


def leftovers():
    return [(p, cmd) for p, _, cmd in processes()
            if MARK.encode() in cmd or (WORK.encode() in cmd and b"gridrun-train" in cmd)]


def watchdog_case(name, grid_tail, train_body, flags, rc, says, job_state):
    # A grid of one job run with a wrapped trainer and no retries: exit code, the watchdog's event
    # line, the job's recorded state, and no process of it left behind.
    g = write(name + ".yaml", "name: %s\n%s%s" % (name, BASE, grid_tail))
    t = wrapper(name + "-train", train_body)
    r = run(g, t, *flags, "--retries", "0")
    print(r.stdout)
    assert r.returncode == rc, r.stdout + r.stderr
    assert says in r.stdout, r.stdout
    jobs = state(name)["jobs"]
    assert all(j["state"] == job_state for j in jobs.values()), jobs
    assert not leftovers(), leftovers()


def case_lingering():
    # Finish normally, then stay: `exec -a` keeps our mark in the lingering process's cmdline.
    watchdog_case("linger", "  max_steps: 6\n  epochs: 1\n", '"$REAL" "$@" || exit $?\nexec -a %s sleep 100000' % MARK,
                  ("--exit-grace", "2"), 0, "had not exited", "completed")


def case_heartbeat():
    watchdog_case("hang", "  max_steps: 200\n  epochs: 0\n", 'exec "$REAL" "$@" --hang-at-step 3 --fail-rank 0',
                  ("--heartbeat-timeout", "3"), 1, "no heartbeat from rank 0", "failed")
    logs = os.path.join(OUT, "hang", "logs")
    errs = "".join(open(os.path.join(logs, f)).read() for f in os.listdir(logs) if f.endswith(".err"))
    assert "watchdog: no heartbeat" in errs, errs[-2000:]


def gpu_count():
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in p.stdout.splitlines() if line.startswith("GPU "))


def case_gpu_share():
    if gpu_count() < 1:
        print("SKIP: no GPU: nvidia-smi lists none")
        sys.exit(77)
    g = write("share.yaml", """name: share
defaults:
  model: lenet
  dataset: synthetic
  device: gpu
  batch_per_rank: 32
  train_samples: 16384
  test_samples: 256
  epochs: 1
  lr: 0.01
seeds: [0, 1, 2, 3]
grid:
  jobs_per_gpu: [1, 4]
compare: {by: jobs_per_gpu}
""")
    r = run(g, TRAIN, "--retries", "0")
    print(r.stdout)
    assert r.returncode == 0, r.stdout + r.stderr
    live, most = 0, 0
    for line in r.stdout.splitlines():
        if re.search(r"\] start ", line):
            live += 1
            most = max(most, live)
        elif re.search(r"\] (done|failed|retry)", line):
            live -= 1
    assert most == 4, "expected four jobs live at once on one GPU, saw %d" % most
    phases = state("share").get("phases", {})
    print("phases:", json.dumps(phases, indent=1))


CASES = {"lingering": case_lingering, "heartbeat": case_heartbeat, "gpu_share": case_gpu_share}

if __name__ == "__main__":
    CASES[CASE]()
    # A passed case leaves nothing behind; a failed one keeps WORK for the post-mortem.
    shutil.rmtree(WORK, ignore_errors=True)
    print("ok:", CASE)
