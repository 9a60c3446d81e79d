#!/usr/bin/env python3
"""`gridrun report A B`: two real runs of the same tiny grid compared side by side.

Runs a two-job grid (mlp on synthetic data, the jobs differ in lr only) with the real `gridrun
run` into one --out folder, and the same grid with one more lr value into another (real mpirun
and gridrun-train, seconds each). Then `gridrun report A B` in json, csv and table: one row per
job id of the first grid (same parameters, same id), both runs' samples/s and step p50 equal to
each run's own single report, B/A ratios recomputed from them, the extra job counted in a note
as a configuration of one run only, the Runs table naming both folders; B given as its
results.h5 compares the same. Also: `--filter rank=1` exits 2 with "did you mean 'ranks'?" (one
run and two), --html/--profile/--group-by with two runs exit 2 naming the flag, one run still
gives the single-run report, and --help shows RUN as a positional argument.

    e2e_compare.py GRIDRUN GRIDRUN_TRAIN
"""
import csv
import io
import json
import math
import os
import subprocess
import sys
import tempfile

GRIDRUN, TRAIN = sys.argv[1:3]
FAILED = []
GRID = """name: cmp
defaults:
  dataset: synthetic
  model: mlp
  device: cpu
  ranks: 1
  threads_per_rank: 1
  epochs: 1
  train_samples: 256
  test_samples: 64
  batch_per_rank: 32
grid:
  lr: [{lrs}]
"""


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


def gridrun(*args):
    return subprocess.run([GRIDRUN, *args], capture_output=True, text=True, timeout=300)


def make_run(tmp, out, lrs):
    folder = os.path.join(tmp, out + "-grid")
    os.makedirs(folder)
    grid = os.path.join(folder, "cmp.yaml")
    with open(grid, "w") as f:
        f.write(GRID.format(lrs=", ".join(lrs)))
    r = subprocess.run([GRIDRUN, "run", grid, "--out", os.path.join(tmp, out), "--train-bin", TRAIN,
                        "--no-report"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-3000:])
        sys.exit(f"FAIL: gridrun run ({out}) exited {r.returncode}")
    return os.path.join(tmp, out, "cmp")


def table(report, title):
    found = [t for t in report["tables"] if t["title"] == title]
    return found[0] if found else None


def single(run_dir):
    """id -> the row of the run's own Jobs table (json)."""
    c = gridrun("report", run_dir, "--format", "json")
    if not check(c.returncode == 0, f"report {run_dir}: exit {c.returncode}: {c.stderr}"):
        return {}
    jobs = table(json.loads(c.stdout), "Jobs")
    return {r["id"]: r for r in jobs["rows"]} if jobs else {}


def close(a, b):
    return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-6)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        a = make_run(tmp, "a", ["0.05", "0.1"])
        b = make_run(tmp, "b", ["0.05", "0.1", "0.2"])
        ja, jb = single(a), single(b)
        check(len(ja) == 2 and len(jb) == 3, f"single reports: {len(ja)} and {len(jb)} jobs")
        extra = sorted(set(jb) - set(ja))
        check(len(extra) == 1 and set(ja) <= set(jb), f"ids: the second grid adds one job, got {extra}")

        c = gridrun("report", a, b, "--format", "json")
        if check(c.returncode == 0, f"report A B json: exit {c.returncode}: {c.stderr}"):
            rep = json.loads(c.stdout)
            runs, cfg = table(rep, "Runs"), table(rep, "Configurations across runs")
            check(runs is not None and cfg is not None, f"tables {[t['title'] for t in rep['tables']]}")
            if runs:
                check([(r["run"], r["folder"], r["jobs"]) for r in runs["rows"]] == [("A", a, 2), ("B", b, 3)],
                      f"Runs table: {runs['rows']}")
            if cfg:
                for col in ("id", "lr", "A samples/s", "B samples/s", "B/A samples/s", "A p50_ms", "B p50_ms",
                            "B/A p50", "A test_acc", "B test_acc", "A status", "B status"):
                    check(col in cfg["columns"], f"no column {col!r}: {cfg['columns']}")
                rows = {r["id"]: r for r in cfg["rows"]}
                check(sorted(rows) == sorted(ja), f"one row per job id of A: {sorted(rows)} vs {sorted(ja)}")
                for jid, r in rows.items():
                    if jid not in ja or jid not in jb:
                        continue
                    sa, sb = ja[jid]["samples/s"], jb[jid]["samples/s"]
                    check(close(r["A samples/s"], sa) and close(r["B samples/s"], sb),
                          f"{jid}: samples/s {r['A samples/s']}, {r['B samples/s']} vs single reports {sa}, {sb}")
                    check(sa > 0 and close(r["B/A samples/s"], sb / sa),
                          f"{jid}: B/A samples/s {r['B/A samples/s']}, expected {sb / sa}")
                    pa, pb = ja[jid]["p50_ms"], jb[jid]["p50_ms"]
                    check(close(r["B/A p50"], pb / pa), f"{jid}: B/A p50 {r['B/A p50']}, expected {pb / pa}")
                    check(close(r["lr"], ja[jid]["lr"]), f"{jid}: lr {r['lr']}")
                    check(r["A status"] == r["B status"] == "completed", f"{jid}: statuses")
                note = [n for n in cfg["notes"] if "one run only" in n]
                check(len(note) == 1 and extra and extra[0] in note[0] and note[0].startswith("1 configuration"),
                      f"note on the configuration of one run only: {cfg['notes']}")

        # B through its index file: the same rows.
        check(gridrun("collect", b, "--quiet").returncode == 0, "collect B")
        c = gridrun("report", a, os.path.join(b, "results.h5"), "--format", "json")
        if check(c.returncode == 0, f"report A B/results.h5: exit {c.returncode}: {c.stderr}"):
            cfg = table(json.loads(c.stdout), "Configurations across runs")
            check(cfg and sorted(r["id"] for r in cfg["rows"]) == sorted(ja), "results.h5: other rows")

        c = gridrun("report", a, b)
        if check(c.returncode == 0, f"report A B table: exit {c.returncode}: {c.stderr}"):
            out = c.stdout
            check(all(len(l) <= 100 for l in out.splitlines()), "table fits 100 columns")
            for part in ("Runs", "Configurations across runs", "B/A samples/s", a, b, *ja.keys(),
                         "in one run only"):
                check(part in out, f"table output lacks {part!r}")
        c = gridrun("report", a, b, "--format", "csv", "--width", "60")
        if check(c.returncode == 0, f"report A B csv: exit {c.returncode}: {c.stderr}"):
            section = [s for s in c.stdout.split("\n\n") if s.startswith("# Configurations across runs")]
            rows = list(csv.DictReader(io.StringIO("\n".join(section[0].splitlines()[1:])))) if section else []
            check(sorted(r["id"] for r in rows) == sorted(ja), f"csv rows {rows}")

        # One run: the single-run report, not a comparison.
        c = gridrun("report", a)
        check(c.returncode == 0 and "Jobs" in c.stdout and "across runs" not in c.stdout,
              f"report A: exit {c.returncode}, {c.stdout[:200]!r}")

        # Filter keys: did-you-mean (one run and two).
        for args in ([a], [a, b]):
            c = gridrun("report", *args, "--filter", "rank=1")
            check(c.returncode == 2 and "unknown key 'rank'; did you mean 'ranks'?" in c.stderr and c.stdout == "",
                  f"report {len(args)} run(s) --filter rank=1: exit {c.returncode}, stderr {c.stderr!r}")
            check("known:" not in c.stderr, f"--filter rank=1 still lists every key: {c.stderr!r}")
        c = gridrun("report", a, b, "--filter", "lr=0.1", "--format", "json")
        if check(c.returncode == 0, f"report A B --filter lr=0.1: exit {c.returncode}: {c.stderr}"):
            cfg = table(json.loads(c.stdout), "Configurations across runs")
            want = [jid for jid, r in ja.items() if close(r["lr"], 0.1)]
            check(cfg and [r["id"] for r in cfg["rows"]] == want, f"--filter lr=0.1 keeps the row {want}")

        # What a comparison refuses.
        for args, flag in ((["--html", os.path.join(tmp, "r.html")], "--html"), (["--profile"], "--profile"),
                           (["--group-by", "lr"], "--group-by")):
            c = gridrun("report", a, b, *args)
            check(c.returncode == 2 and flag in c.stderr and c.stdout == "",
                  f"report A B {' '.join(args)}: exit {c.returncode}, stderr {c.stderr!r}")
        check(not os.path.exists(os.path.join(tmp, "r.html")), "--html with two runs wrote a file")
        c = gridrun("report", a, os.path.join(tmp, "nothing"))
        check(c.returncode == 2 and "nothing" in c.stderr, f"report A MISSING: exit {c.returncode}")

        h = gridrun("report", "--help")
        check(h.returncode == 0 and "gridrun report RUN_DIR [RUN_DIR ...]" in h.stdout and "--input" not in h.stdout,
              "--help: RUN not shown as a positional argument")
        check(all(len(l) <= 100 for l in h.stdout.splitlines()), "--help fits 100 columns")

    if FAILED:
        sys.exit(f"FAIL: {len(FAILED)} check(s) failed")
    print("ok: gridrun report A B compares the runs")


if __name__ == "__main__":
    main()
