#!/usr/bin/env python3
"""`gridrun export` on a real run: the tables a program reads back as they are.

Runs a two-job grid (mlp on synthetic data, the jobs differ in lr only, compared by lr) with the
real `gridrun run` (real mpirun and gridrun-train, seconds), then exports it with every
--what (steps, epochs, jobs, phases) in both formats (csv on stdout, json through --out) and
reads each back with the csv and json modules, and with pandas.read_csv when pandas is installed:
one header line of snake_case names, no comment or section lines, job_id and the varying parameter
(lr) as columns, the rows each table must have (steps = the jobs' steps, 1-based as
docs/results.md says; epochs; 2 jobs; 2 phases), and json the same keys and values as csv.
Also the command line: --help shows RUN_DIR as an argument, bad flags and values exit 2 naming
the flag, and a results.h5 exports like its run directory. With TESTWRITER, also the synthetic
run of gridrun-results-testwriter (jobs of 1, 2 and 4 ranks, failed, running and unreadable ones,
phases): per-rank columns padded, every readable job present, unreadable files named on stderr.

    e2e_export.py GRIDRUN GRIDRUN_TRAIN [TESTWRITER]
"""
import csv
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile

GRIDRUN, TRAIN = sys.argv[1:3]
TESTWRITER = sys.argv[3] if len(sys.argv) > 3 else None
FAILED = []
EPOCHS, STEPS_PER_EPOCH = 2, 8  # train_samples / batch_per_rank
GRID = f"""name: export
compare: {{by: lr}}
defaults:
  dataset: synthetic
  model: mlp
  device: cpu
  ranks: 1
  threads_per_rank: 1
  epochs: {EPOCHS}
  train_samples: {8 * 32}
  test_samples: 64
  batch_per_rank: 32
  optimizer: sgd
grid:
  lr: [0.05, 0.1]
seeds: [0]
"""


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


def gridrun(*args):
    return subprocess.run([GRIDRUN, *args], capture_output=True, text=True, timeout=300)


def number(text):
    return float(text) if text != "" else math.nan


def same(a, b):
    """A CSV cell and the JSON value of the same field."""
    if b is None:
        return a == ""
    if isinstance(b, bool):
        return a == ("true" if b else "false")
    if isinstance(b, (int, float)):
        return a != "" and math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0)
    return a == b


def read_csv_checked(name, text):
    """The rows of a tidy CSV, after checking its shape; None when it is not one."""
    lines = text.splitlines()
    if not check(lines, f"{name}: empty output"):
        return None, []
    check(not any(l.startswith("#") for l in lines), f"{name}: comment or section line in CSV")
    check(all(l.strip() for l in lines), f"{name}: blank line in CSV")
    reader = csv.reader(io.StringIO(text))
    header = next(reader)
    rows = list(reader)
    bad = [c for c in header if not re.fullmatch(r"[a-z][a-z0-9_]*", c)]
    check(not bad, f"{name}: column names not snake_case: {bad}")
    check(len(set(header)) == len(header), f"{name}: repeated column names {header}")
    check(all(len(r) == len(header) for r in rows), f"{name}: rows of another width than the header")
    return header, [dict(zip(header, r)) for r in rows]


def synthetic(run_dir):
    """The testwriter's run: jobs of several widths and states, and two phases."""
    subprocess.run([TESTWRITER, "run", run_dir], check=True, capture_output=True)
    c = gridrun("export", run_dir, "--what", "jobs")
    check(c.returncode == 0, f"synthetic jobs: exit {c.returncode}: {c.stderr}")
    check("missing000000" in c.stderr and "corrupt000000" in c.stderr,
          f"synthetic: unreadable files not named on stderr: {c.stderr!r}")
    header, jobs = read_csv_checked("synthetic jobs", c.stdout)
    steps = []
    if header:
        check(header[:5] == ["job_id", "device", "global_batch", "ranks", "seed"],
              f"synthetic jobs: leading columns {header[:5]}")
        check(len(jobs) == 10, f"synthetic jobs: {len(jobs)} rows, expected 10")
        check({j["status"] for j in jobs} == {"completed", "failed", "running", "target_reached"},
              "synthetic jobs: statuses")
    c = gridrun("export", run_dir, "--what", "steps")
    header, steps = read_csv_checked("synthetic steps", c.stdout)
    if header:
        check(header[-4:] == [f"rank_step_s_{r}" for r in range(4)], f"synthetic steps: per-rank {header[-4:]}")
        for s in steps:
            ranks = int(s["ranks"])
            filled = [s[f"rank_step_s_{r}"] != "" for r in range(4)]
            if not check(filled == [r < ranks for r in range(4)],
                         f"synthetic steps: {s['job_id']} per-rank cells {filled}"):
                break
    c = gridrun("export", run_dir, "--what", "phases", "--format", "json")
    phases = json.loads(c.stdout) if c.returncode == 0 else []
    check(sorted(p["phase"] for p in phases) == ["one-large", "several-small"],
          f"synthetic phases: {[p.get('phase') for p in phases]}")
    print(f"synthetic run: {len(jobs)} jobs, {len(steps)} steps, {len(phases)} phases")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        grid = os.path.join(tmp, "export.yaml")
        with open(grid, "w") as f:
            f.write(GRID)
        r = subprocess.run([GRIDRUN, "run", grid, "--out", tmp, "--train-bin", TRAIN, "--no-report"],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            print(r.stdout[-3000:], r.stderr[-3000:])
            sys.exit(f"FAIL: gridrun run exited {r.returncode}")
        run_dir = os.path.join(tmp, "export")

        tables = {}
        for what in ("steps", "epochs", "jobs", "phases"):
            c = gridrun("export", run_dir, "--what", what)
            if not check(c.returncode == 0, f"export --what {what}: exit {c.returncode}: {c.stderr}"):
                continue
            header, rows = read_csv_checked(what, c.stdout)
            if header is None:
                continue
            tables[what] = (header, rows)
            out = os.path.join(tmp, f"{what}.json")
            j = gridrun("export", run_dir, "--what", what, "--format", "json", "--out", out)
            check(j.returncode == 0 and j.stdout == "", f"export --what {what} -f json -o: exit {j.returncode}, "
                  f"stdout {j.stdout[:200]!r}, stderr {j.stderr}")
            with open(out) as f:
                objs = json.load(f)
            check(isinstance(objs, list) and all(isinstance(o, dict) for o in objs),
                  f"{what}: json is not an array of objects")
            check(len(objs) == len(rows), f"{what}: json has {len(objs)} rows, csv {len(rows)}")
            for k, (o, row) in enumerate(zip(objs, rows)):
                if not check(list(o) == header, f"{what}: json row {k} keys {list(o)} != csv header {header}"):
                    break
                diff = [key for key in header if not same(row[key], o[key])]
                if not check(not diff, f"{what}: row {k}: json and csv differ in {diff}"):
                    break
            print(f"{what}: {len(rows)} rows, columns {header}")

        if "jobs" in tables:
            header, jobs = tables["jobs"]
            for col in ("job_id", "lr", "status", "exit_reason", "steps_done", "epochs_done", "samples_per_s",
                        "final_test_acc"):
                check(col in header, f"jobs: no {col} column")
            check(header[:2] == ["job_id", "lr"], f"jobs: job_id and lr first, got {header[:2]}")
            check(len(jobs) == 2, f"jobs: {len(jobs)} rows, expected 2")
            check(sorted(number(j["lr"]) for j in jobs) == [0.05, 0.1], "jobs: lr values")
            check(all(j["status"] == "completed" for j in jobs), "jobs: status completed")
            check(all(number(j["steps_done"]) == EPOCHS * STEPS_PER_EPOCH for j in jobs), "jobs: steps_done")
            ids = {j["job_id"] for j in jobs}
            steps_total = sum(int(number(j["steps_done"])) for j in jobs)
            epochs_total = sum(int(number(j["epochs_done"])) for j in jobs)
        else:
            ids, steps_total, epochs_total = set(), EPOCHS * STEPS_PER_EPOCH * 2, EPOCHS * 2

        if "steps" in tables:
            header, steps = tables["steps"]
            check(header[:4] == ["job_id", "lr", "step", "epoch"], f"steps: leading columns {header[:4]}")
            for col in ("loss", "step_s", "samples_per_s", "wall_s", "rank_step_s_0"):
                check(col in header, f"steps: no {col} column")
            check(len(steps) == steps_total == 2 * EPOCHS * STEPS_PER_EPOCH,
                  f"steps: {len(steps)} rows, the jobs did {steps_total}")
            check({s["job_id"] for s in steps} == ids, "steps: job ids differ from the jobs table's")
            for job in ids:
                mine = [int(s["step"]) for s in steps if s["job_id"] == job]
                check(mine == list(range(1, EPOCHS * STEPS_PER_EPOCH + 1)),
                      f"steps: job {job} steps {mine[:3]}..., expected 1..{EPOCHS * STEPS_PER_EPOCH}")
                epochs = sorted({int(s["epoch"]) for s in steps if s["job_id"] == job})
                check(epochs == list(range(1, EPOCHS + 1)), f"steps: job {job} epochs {epochs}")
            check(all(math.isfinite(number(s["loss"])) for s in steps), "steps: a loss is not a number")

        if "epochs" in tables:
            header, epochs = tables["epochs"]
            check(header[:3] == ["job_id", "lr", "epoch"], f"epochs: leading columns {header[:3]}")
            for col in ("train_loss", "test_acc", "epoch_s"):
                check(col in header, f"epochs: no {col} column")
            check(len(epochs) == epochs_total == 2 * EPOCHS, f"epochs: {len(epochs)} rows, expected {epochs_total}")

        if "phases" in tables:
            header, phases = tables["phases"]
            for col in ("phase", "lr", "jobs", "makespan_s", "samples_per_s", "util_mean", "launch_share"):
                check(col in header, f"phases: no {col} column")
            check(len(phases) == 2, f"phases: {len(phases)} rows, expected 2")
            check(sorted(p["phase"] for p in phases) == ["lr=0.05", "lr=0.1"], "phases: labels")
            check(all(p["jobs"] == "1" for p in phases), "phases: one job each")

        # pandas, when installed (python3-pandas): read_csv as is.
        try:
            import pandas
        except ImportError:
            pandas = None
            print("pandas not installed: read back with the csv module only")
        if pandas is not None:
            for what, (header, rows) in tables.items():
                df = pandas.read_csv(io.StringIO(gridrun("export", run_dir, "--what", what).stdout))
                check(list(df.columns) == header and len(df) == len(rows),
                      f"{what}: pandas.read_csv gives {list(df.columns)} x {len(df)}")
            if "steps" in tables:
                df = pandas.read_csv(io.StringIO(gridrun("export", run_dir, "--what", "steps").stdout))
                check(sorted(df.groupby("lr").size().tolist()) == [EPOCHS * STEPS_PER_EPOCH] * 2,
                      "steps: pandas groupby lr")

        # The same run through its index file.
        c = gridrun("collect", run_dir, "--quiet")
        check(c.returncode == 0, f"collect: exit {c.returncode}: {c.stderr}")
        c = gridrun("export", os.path.join(run_dir, "results.h5"), "--what", "steps")
        if check(c.returncode == 0, f"export results.h5: exit {c.returncode}: {c.stderr}") and "steps" in tables:
            check(read_csv_checked("steps of results.h5", c.stdout)[0] == tables["steps"][0],
                  "results.h5: other steps columns than its run directory")

        # The command line.
        h = gridrun("export", "--help")
        check(h.returncode == 0, f"--help: exit {h.returncode}")
        check(all(len(l) <= 100 for l in h.stdout.splitlines()), "--help fits 100 columns")
        check("RUN_DIR" in h.stdout and "--input" not in h.stdout, "--help: RUN_DIR not shown as an argument")
        for flag in ("--what", "--format", "--out", "--all"):
            check(flag in h.stdout, f"--help: {flag} not documented")
        for args, named in ((["--what", "bogus"], "--what"), (["--what", "jobs", "--format", "xml"], "--format"),
                            (["--what", "jobs", "--bogus"], "--bogus"), ([], "--what"),
                            (["--what", "jobs", "--out", os.path.join(tmp, "no", "x.csv")], "--out")):
            b = gridrun("export", run_dir, *args)
            check(b.returncode == 2 and named in b.stderr and b.stdout == "",
                  f"export {' '.join(args)}: exit {b.returncode} (expected 2), stderr {b.stderr!r}")
        b = gridrun("export", "--what", "jobs")
        check(b.returncode == 2 and "RUN_DIR" in b.stderr, f"export without RUN_DIR: exit {b.returncode}")
        b = gridrun("export", os.path.join(tmp, "nothing"), "--what", "jobs")
        check(b.returncode == 2, f"export of a missing run: exit {b.returncode}")

        if TESTWRITER:
            synthetic(os.path.join(tmp, "synthetic"))

    if FAILED:
        sys.exit(f"FAIL: {len(FAILED)} check(s) failed")
    print("ok: gridrun export tables read back")


if __name__ == "__main__":
    main()
