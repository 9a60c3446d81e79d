#!/usr/bin/env python3
"""Wording and wrong-kind paths (issue 58, items 5 and 6), with the real binaries, in seconds.

One run of one tiny job (mlp on 256 synthetic samples, 4 epochs of 8 steps) whose target is
reached after its first epoch, then the same grid with `--set epochs=2` (a second grid in the run
folder). Checked, each against its exact corrected text:

  epoch      the job's log says the target was reached at epoch 1/4, and status shows epoch 1/4
             (it said 2/4: the progress file counted the epoch after the last one run).
  all        `report --all` shows one epochs column, done/planned ("1/4", "2/2").
  simulate   "1 job ... (1 node, 2 cores" and the sign of --against's error.
  calibrate  the suggested simulate command keeps --out, --launch and -j (--accept-load: the
             machine may be busy; the load is not what is tested).
  paths      `report GRID.yaml`, `run RUN_DIR`, `plan RUN_DIR`, `status RUNS`, `report RUNS`,
             `report --format html`, `report FILE` (not HDF5): exit 2 with the command meant.
  data       `plan` and `run` of `dataset: cifar10` whose data_dir holds no CIFAR-10: exit 2 at
             the grid's data_dir line, nothing launched.

    e2e_wording.py GRIDRUN GRIDRUN_TRAIN
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

GRIDRUN, TRAIN = (os.path.abspath(a) for a in sys.argv[1:3])
FAILED = []

GRID = """name: tgt
defaults:
  model: mlp
  dataset: synthetic
  train_samples: 256
  test_samples: 64
  epochs: 4
  global_batch: 32
  lr: 0.05
  target_accuracy: 0.01
  device: cpu
  threads_per_rank: 1
grid:
  seed: [0]
"""


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what, flush=True)
    return cond


def gridrun(*args, cwd):
    p = subprocess.run([GRIDRUN] + [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def exits_2_with(args, cwd, text):
    code, out = gridrun(*args, cwd=cwd)
    check(code == 2, f"gridrun {' '.join(args)}: exit {code}, expected 2: {out}")
    check(text in out, f"gridrun {' '.join(args)}: {text!r} not in: {out}")


def main():
    tmp = tempfile.mkdtemp(prefix="gridrun-wording-")
    try:
        with open(os.path.join(tmp, "t.yaml"), "w") as f:
            f.write(GRID)
        code, out = gridrun("run", "t.yaml", "--out", "runs", "--train-bin", TRAIN, "--no-report", cwd=tmp)
        if not check(code == 0, f"run: exit {code}: {out}"):
            return
        # epoch: the log and status say where the job stopped.
        logs = os.path.join(tmp, "runs", "tgt", "logs")
        log = "".join(open(os.path.join(logs, n)).read() for n in os.listdir(logs) if n.endswith(".out"))
        check(re.search(r"^epoch 1/4: target_accuracy 0\.01 reached \(test acc [0-9.]+\), stopping$", log, re.M),
              f"no target line in the log: {log}")
        code, out = gridrun("status", "runs/tgt", cwd=tmp)
        check(re.search(r"target_reached .* 1/4 ", out), f"status: epoch 1/4 expected: {out}")

        code, out = gridrun("run", "t.yaml", "--out", "runs", "--train-bin", TRAIN, "--no-report",
                            "--set", "epochs=2", "--set", "target_accuracy=0", cwd=tmp)
        check(code == 0, f"second run: exit {code}: {out}")
        code, out = gridrun("report", "runs/tgt", "--all", cwd=tmp)
        header = next((l for l in out.splitlines() if l.startswith("id ")), "")
        check(header.split().count("epochs") == 1, f"report --all: one epochs column expected: {header}")
        check(re.search(r" 1/4 ", out) and re.search(r" 2/2 ", out), f"report --all: 1/4 and 2/2 expected: {out}")

        # simulate: singular counts and the error's sign.
        code, out = gridrun("simulate", "t.yaml", "--out", "runs", "--cores", "2", "--against", "runs/tgt",
                            "--set", "epochs=2", "--set", "target_accuracy=0", cwd=tmp)
        check("simulation of tgt: 1 job, policy packed, this machine, --cores 2 (1 node, 2 cores, 0 GPUs)" in out,
              f"simulate header: {out}")
        check("makespan" in out and ", 1 job on 1 node," in out, f"simulate schedule line: {out}")
        check("  error = (predicted - measured) / measured: + the run took less time than predicted, - more\n"
              in out, f"simulate --against: no sign line: {out}")

        # calibrate: the suggested commands keep the flags given.
        code, out = gridrun("calibrate", "t.yaml", "--out", "cal", "--launch", "cold", "-j", "1", "--accept-load",
                            "--train-bin", TRAIN, "--steps", "3", cwd=tmp)
        check(code == 0, f"calibrate: exit {code}: {out}")
        flags = "--out cal --launch cold --max-parallel 1 --train-bin " + TRAIN
        check(f"`gridrun simulate t.yaml {flags}` predicts from it" in out, f"calibrate: simulate hint: {out}")
        if "run it (" in out:
            check(f"run it (`gridrun run t.yaml {flags}`) instead" in out, f"calibrate: run hint: {out}")

        # paths of the wrong kind.
        exits_2_with(["report", "t.yaml"], tmp,
                     "t.yaml is a grid file, not a run folder or its results.h5: its run is `gridrun report runs/tgt`")
        exits_2_with(["run", "runs/tgt"], tmp,
                     "'runs/tgt' is a run folder, not a grid file: `gridrun status runs/tgt` shows its jobs, "
                     "`gridrun report runs/tgt` its results; `gridrun run " + os.path.join(tmp, "t.yaml") +
                     " --out runs --set epochs=2 --set target_accuracy=0.0` continues it")
        exits_2_with(["plan", "runs/tgt"], tmp, "'runs/tgt' is a run folder, not a grid file")
        exits_2_with(["status", "runs"], tmp,
                     "'runs' is a folder of 1 run (runs/tgt), not a run: `gridrun ls runs` lists them, "
                     "`gridrun status runs/tgt` takes one")
        exits_2_with(["report", "runs"], tmp, "`gridrun ls runs` lists them")
        exits_2_with(["report", "runs/tgt", "--format", "html"], tmp,
                     "--format html: the HTML report is a file of its own: `gridrun report runs/tgt --html "
                     "report.html`")
        exits_2_with(["report", "runs/tgt/state.json"], tmp,
                     "runs/tgt/state.json is not a run folder or its results.h5 (no HDF5 signature)")
        exits_2_with(["status", "t.yaml"], tmp, "t.yaml is a grid file, not a run folder: its run is "
                     "`gridrun status runs/tgt`")

        # data: a built-in data set's files are checked at plan and before run launches anything.
        with open(os.path.join(tmp, "c.yaml"), "w") as f:
            f.write("name: c10\ndefaults:\n  model: lenet\n  dataset: cifar10\n  data_dir: empty\n"
                    "  epochs: 1\n  device: cpu\n  threads_per_rank: 1\n")
        os.makedirs(os.path.join(tmp, "empty"))
        for cmd in (["plan", "c.yaml"], ["run", "c.yaml", "--out", "runs2", "--train-bin", TRAIN]):
            exits_2_with(cmd, tmp, "c.yaml:5:13: defaults.data_dir: dataset=cifar10 reads 6 files from data_dir "
                         "'empty'; missing: data_batch_1.bin")
        check(not os.path.exists(os.path.join(tmp, "runs2")), "run of c.yaml wrote runs2/")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
    if FAILED:
        print(f"{len(FAILED)} check(s) failed", flush=True)
        sys.exit(1)
    print("ok", flush=True)
