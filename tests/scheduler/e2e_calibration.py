"""A damaged calibration.json with the real `gridrun` (issue 45, finding 1): `simulate` and `run`
looped forever (100 % CPU) when a configuration lacked step_s or launch_s or held a non-number, and
printed nonsense makespans for -1, 1e300 and -1e9. Every command here runs under a 30 s timeout:
it must end, warn once naming the file and the key, and predict the damaged configuration from
the cost model (a finite makespan, never "?" or a negative number of days).

The calibration is written by hand for a fake gridrun-train (its build fingerprint is the file's
size and mtime, as `gridrun calibrate` records it). The grid keeps every parameter a configuration
key resets at its reset value (lr 0.1, seed 0, epochs 1, ...), so each job's id is its
configuration key and `gridrun plan --format json` says which keys to damage.

simulate: each damage in turn, `gridrun simulate` (table and json).
run: `gridrun run` with the fake trainer (its jobs fail at once): it must get past the prediction,
  launch, and end; before the fix it hung before launching anything.

Usage: e2e_calibration.py GRIDRUN CASE
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

GRIDRUN, CASE = sys.argv[1:3]
WORK = tempfile.mkdtemp(prefix="gridrun-e2e-calibration-")
TIMEOUT = 30
GRID = """name: calib
defaults: {dataset: synthetic, device: cpu, train_samples: 256, test_samples: 64, batch_per_rank: 32,
           lr: 0.1, epochs: 1}
grid:
  model: [mlp, lenet]
"""


def fail(what):
    sys.exit("FAIL: " + what)


def gr(*args):
    try:
        return subprocess.run([GRIDRUN] + list(args), text=True, capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        fail("gridrun %s did not end within %d s (the hang of issue 45)" % (" ".join(args), TIMEOUT))


def figures(launch, step):
    return {"launch_s": launch, "warm_s": 0.05, "warm_steps": 5, "step_s": step, "eval_s": 0.01,
            "checkpoint_s": 0.01, "tail_s": 0.01, "steps_per_epoch": 8, "final_acc": None,
            "acc_steps": 0, "learn_key": "", "label": ""}


def main():
    grid = os.path.join(WORK, "calib.yaml")
    with open(grid, "w") as f:
        f.write(GRID)
    train = os.path.join(WORK, "gridrun-train")
    with open(train, "w") as f:
        f.write("#!/bin/sh\necho 'fake gridrun-train: not a trainer' >&2\nexit 3\n")
    os.chmod(train, 0o755)
    st = os.stat(train)
    build = "%d-%d" % (st.st_size, int(st.st_mtime))
    p = gr("plan", grid, "--format", "json")
    if p.returncode != 0:
        fail("plan exited %d: %s" % (p.returncode, p.stderr))
    plan = json.loads(p.stdout)
    ids = [j["id"] for j in (plan["jobs"] if isinstance(plan, dict) else plan)]
    if len(ids) != 2:
        fail("expected 2 jobs, got %s" % ids)
    good, bad = ids
    out = os.path.join(WORK, "runs")
    run_dir = os.path.join(out, "calib")
    os.makedirs(run_dir)
    cal_file = os.path.join(run_dir, "calibration.json")

    def write_calibration(damage):
        cal = {"format": "gridrun-calibration-1", "host": socket.gethostname(), "train_bin": train,
               "build": build, "torch_version": "", "gridrun_version": "", "created": "2026-11-26T00:00:00Z",
               "cost_s": 1, "configs": {good: figures(0.5, 0.01), bad: figures(0.5, 0.01)}, "groups": []}
        damage(cal["configs"][bad])
        with open(cal_file, "w") as f:
            json.dump(cal, f)

    def renamed(key, new):
        def damage(c):
            c[new] = c.pop(key)
        return damage

    def value(key, v):
        def damage(c):
            c[key] = v
        return damage

    # (what, damage, the key the warning names)
    damages = [("step_s renamed (st%p_s)", renamed("step_s", "st%p_s"), "step_s"),
               ("launch_s renamed", renamed("launch_s", "lau\\nch_s"), "launch_s"),
               ("step_s a string", value("step_s", "fast"), "step_s"),
               ("step_s null", value("step_s", None), "step_s"),
               ("step_s -1", value("step_s", -1), "step_s"),
               ("step_s 1e300", value("step_s", 1e300), "step_s"),
               ("launch_s -1e9", value("launch_s", -1e9), "launch_s"),
               ("steps_per_epoch 0", value("steps_per_epoch", 0), "steps_per_epoch")]
    if CASE == "simulate":
        for what, damage, key in damages:
            write_calibration(damage)
            p = gr("simulate", grid, "--out", out, "--train-bin", train, "--cores", "2")
            text = p.stdout + p.stderr
            if p.returncode != 0:
                fail("%s: simulate exited %d\n%s" % (what, p.returncode, text))
            warning = "warning: %s: configs.%s.%s: " % (cal_file, bad, key)
            if text.count(warning) != 1:
                fail("%s: expected one line with '%s', got:\n%s" % (what, warning, text))
            if "1 alone, 0 side by side, 1 from the cost model" not in text and \
                    "0 alone, 1 side by side, 1 from the cost model" not in text:
                m = re.search(r"durations: .*", text)
                fail("%s: the damaged configuration is not from the cost model: %s" % (what, m and m.group(0)))
            m = re.search(r"^makespan (\S+),", p.stdout, re.M)
            if not m or not re.fullmatch(r"(\d+d\d\dh|\d+h\d\dm|\d+m\d\ds|\d+s)", m.group(1)):
                fail("%s: makespan not a sane duration: %s" % (what, m and m.group(0)))
            p = gr("simulate", grid, "--out", out, "--train-bin", train, "--cores", "2", "--format", "json")
            if p.returncode != 0:
                fail("%s: simulate --format json exited %d\n%s" % (what, p.returncode, p.stderr))
            j = json.loads(p.stdout)  # the warning goes to stderr, the JSON stays JSON
            if not (0 < j["makespan_s"] < 1e6):
                fail("%s: makespan_s %r" % (what, j["makespan_s"]))
            if warning not in p.stderr:
                fail("%s: json: no warning on stderr: %s" % (what, p.stderr))
            print("ok: %s: %s" % (what, warning + text.split(warning, 1)[1].splitlines()[0]))
    elif CASE == "run":
        write_calibration(renamed("step_s", "st%p_s"))
        p = gr("run", grid, "--out", out, "--train-bin", train, "--cores", "2", "--retries", "0",
               "--no-report")
        text = p.stdout + p.stderr
        warning = "warning: %s: configs.%s.step_s: missing" % (cal_file, bad)
        if warning not in text:
            fail("run: no warning '%s':\n%s" % (warning, text))
        # The fake trainer fails every job: the run got past the prediction, launched and ended.
        if p.returncode == 0 or "start " not in text:
            fail("run: expected launched jobs that fail (exit != 0), got %d:\n%s" % (p.returncode, text))
        with open(os.path.join(run_dir, "prediction.json")) as f:
            pred = json.load(f)
        if not (0 < pred["makespan_s"] < 1e6):
            fail("run: prediction.json makespan_s %r" % pred["makespan_s"])
        print("ok: run ended with %d after its jobs failed; %s" % (p.returncode, warning))
    else:
        fail("unknown case " + CASE)


try:
    main()
finally:
    shutil.rmtree(WORK, ignore_errors=True)
print("PASS")
