#!/usr/bin/env python3
"""Bit-flipped copies of every kind of run file (issue 45): no crash, no hang, no job lost, and no
figure changed without a warning naming the file.

A real run (calibrate, then run: a compare-by grid of 6 jobs, real gridrun-train) is the
original. Each copy flips 1-8 random bits (seeded) of one file, drawn from every kind gridrun
reads back: state.json, calibration.json, prediction.json, a job file (jobs/ID.json), a result
file (results/ID.h5), the results folder's index, the collected results.h5 and the run's grid
copy. On each copy, in the
order a person would: status (json), collect, report (json), export (every table, json), simulate
(with the copy's calibration), then run, which must redo whatever the damage cost and end with
every job completed. Checks per copy:
  - every command ends by itself (a timeout is a hang) and with exit 0, 1 or 2, never a signal;
  - every number export prints before the run equals the original's, unless some command of this
    copy named the damaged file (its name in stdout or stderr);
  - after the run, status shows every job completed and the report lists every job.

    e2e_bitflip.py GRIDRUN GRIDRUN_TRAIN [--copies N] [--seed S] [--keep DIR]

ctest runs 24 copies (3 of each kind); bench/scheduler/bench_bitflip.sh runs 500 and prints the
counts for BENCHMARKS.md.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("gridrun")
ap.add_argument("train")
ap.add_argument("--copies", type=int, default=24)
ap.add_argument("--seed", type=int, default=45)
ap.add_argument("--keep", help="keep the work folder here (a failing copy stays for a look)")
args = ap.parse_args()
WORK = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="gridrun-e2e-bitflip-")
os.makedirs(WORK, exist_ok=True)
TIMEOUT = 300  # seconds per command: far above any normal one here (a hang, not a slow machine)
GRID = """name: flip
defaults:
  model: mlp
  dataset: synthetic
  device: cpu
  threads_per_rank: 1
  train_samples: 256
  test_samples: 64
  epochs: 1
  lr: 0.05
grid:
  batch_per_rank: [32, 64]
seeds: [0, 1, 2]
compare:
  by: batch_per_rank
"""
KINDS = ("state", "calibration", "prediction", "job_file", "result", "index", "results_h5", "grid_copy")
EXPORTS = ("jobs", "epochs", "steps", "phases")


def fail(msg):
    sys.exit("FAIL: " + msg)


def gridrun(*a):
    try:
        return subprocess.run([args.gridrun] + list(a), text=True, capture_output=True, timeout=TIMEOUT,
                              errors="replace")
    except subprocess.TimeoutExpired:
        fail("hang: gridrun %s ran over %d s" % (" ".join(a), TIMEOUT))


def files_of(run, kind):
    if kind in ("state", "calibration", "prediction"):
        p = os.path.join(run, kind + ".json")
        return [p] if os.path.exists(p) else []
    if kind == "job_file":
        d = os.path.join(run, "jobs")
        return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".json"))
    if kind == "result":
        d = os.path.join(run, "results")
        return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".h5"))
    if kind == "results_h5":
        p = os.path.join(run, "results.h5")
        return [p] if os.path.exists(p) else []
    if kind == "index":
        p = os.path.join(run, "results", ".gridrun-index")
        return [p] if os.path.exists(p) else []
    p = os.path.join(run, "grid.yaml")
    return [p] if os.path.exists(p) else []


def numbers(run):
    """Every table export prints, as {table: rows}; stderr of all of them."""
    out, said = {}, ""
    for what in EXPORTS:
        p = gridrun("export", run, "--what", what, "--format", "json")
        said += p.stderr
        out[what] = json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else None
    return out, said


def report_ids(run):
    p = gridrun("report", run, "--format", "json")
    ids = set()
    if p.returncode == 0:
        doc = json.loads(p.stdout)
        for t in doc if isinstance(doc, list) else doc.get("tables", []):
            if t.get("title") == "Jobs":
                for row in t["rows"]:
                    ids.add(row[t["columns"].index("id")] if isinstance(row, list) else row["id"])
    return ids, p


def main():
    grid = os.path.join(WORK, "flip.yaml")
    with open(grid, "w") as f:
        f.write(GRID)
    runs = os.path.join(WORK, "original")
    for cmd in (["calibrate", grid, "--out", runs, "--train-bin", args.train, "--accept-load"],
                ["run", grid, "--out", runs, "--train-bin", args.train, "--no-report"]):
        p = gridrun(*cmd)
        if p.returncode != 0:
            fail("gridrun %s exited %d:\n%s\n%s" % (cmd[0], p.returncode, p.stdout, p.stderr))
    original = os.path.join(runs, "flip")
    gridrun("collect", original)
    for kind in KINDS:
        if not files_of(original, kind):
            fail("the original run has no %s file" % kind)
    want, said = numbers(original)
    if any(v is None for v in want.values()) or said.strip():
        fail("the original run exports cleanly: %s" % said)
    all_ids = {j["job_id"] for j in want["jobs"]}
    if len(all_ids) != 6:
        fail("6 jobs in the original run, export shows %d" % len(all_ids))

    rng = random.Random(args.seed)
    counts = {"copies": 0, "named": 0, "silent_changes": 0, "redone_jobs": 0, "by_kind": {}}
    for c in range(args.copies):
        kind = KINDS[c % len(KINDS)]
        out = os.path.join(WORK, "copy")
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(runs, out, symlinks=True)
        run = os.path.join(out, "flip")
        victim = rng.choice(files_of(run, kind))
        data = bytearray(open(victim, "rb").read())
        flips = rng.randint(1, 8)
        for _ in range(flips):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        with open(victim, "wb") as f:
            f.write(bytes(data))
        name = os.path.basename(victim)
        where = "copy %d (%s, %d bit(s) of %s)" % (c, kind, flips, name)

        heard = ""
        for cmd in (["status", run, "--format", "json"], ["collect", run], ["report", run, "--format", "json"],
                    ["simulate", grid, "--out", out]):
            p = gridrun(*cmd)
            if p.returncode not in (0, 1, 2):
                fail("%s: gridrun %s ended with %d (a crash):\n%s" % (where, cmd[0], p.returncode, p.stderr))
            heard += p.stdout + p.stderr
        got, said = numbers(run)
        heard += said
        named = name in heard
        changed = [w for w in EXPORTS if got[w] != want[w]]
        if changed and not named:
            counts["silent_changes"] += 1
            print("%s: %s changed and no command named %s" % (where, ", ".join(changed), name))
        counts["named"] += named

        p = gridrun("run", grid, "--out", out, "--train-bin", args.train, "--no-report")
        if p.returncode != 0:
            fail("%s: gridrun run exited %d:\n%s\n%s" % (where, p.returncode, p.stdout, p.stderr))
        m = re.search(r"(\d+) to run\)", p.stdout)
        counts["redone_jobs"] += int(m.group(1)) if m else 0
        st = json.loads(gridrun("status", run, "--format", "json").stdout)
        done = {j["id"] for j in st["jobs"] if j["state"] == "completed"}
        if done != all_ids:
            fail("%s: after the run, jobs not completed: %s" % (where, sorted(all_ids - done)))
        ids, _ = report_ids(run)
        if ids != all_ids:
            fail("%s: after the run the report lists %d of 6 jobs" % (where, len(ids)))
        counts["copies"] += 1
        k = counts["by_kind"].setdefault(kind, {"copies": 0, "named": 0})
        k["copies"] += 1
        k["named"] += named
        shutil.rmtree(out)
    print("bitflip: " + json.dumps(counts, sort_keys=True))
    if counts["silent_changes"]:
        fail("%d copies changed exported figures without naming the damaged file" % counts["silent_changes"])
    print("ok")


main()
if not args.keep:
    shutil.rmtree(WORK, ignore_errors=True)
