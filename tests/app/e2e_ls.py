#!/usr/bin/env python3
"""`gridrun ls` and the one job selector `--only` of status, report and export (issue 49, point 4).

Makes four runs in one runs folder, in seconds, with the real binaries:
  done4    4 finished jobs (ranks x lr) written by gridrun-test-make-run (the real JobWriter, no training);
  failed2  2 jobs `gridrun run` launched with a trainer that exits 1 at once (--retries 0): failed;
  pending2 2 jobs a `gridrun submit --dry-run` planned and never ran: pending;
  cmp      2 jobs of a compare-by grid trained by the real gridrun-train (1 rank, 16 steps each):
           a report with a verdict;
and a folder that is no run, and a fifth run one level deeper (only with --depth 2).

ls: one row per run with the counts status gives, in table, csv and json (read back with the csv and
json modules, the same values), the answer (winner and ratio first) and the whole verdict `gridrun
report` prints, the answer within 100 columns, last change as ISO
time; nothing written into the runs but their summary cache (every other file's size and mtime, the
results index included, are the same after ls), and a second ls answers the same from that cache; a damaged state.json gives that run a row naming the problem, the other rows
unchanged and exit 0, and so does an unreadable results file (named); DIR itself as a run,
--depth, bad flags (exit 2).
--only: status, report and export keep the matching jobs (by parameter, typed: lr=0.10 is 0.1; by id;
by status), report --filter is still read, a bad key exits 2 with a did-you-mean, export --what
phases refuses it.

    e2e_ls.py GRIDRUN GRIDRUN_TRAIN GRIDRUN_TEST_MAKE_RUN
"""
import csv
import datetime
import io
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile

GRIDRUN, TRAIN, MAKE_RUN = (os.path.abspath(a) for a in sys.argv[1:4])  # the commands run in a temporary folder
FAILED = []
RUNS = ["runs/cmp", "runs/done4", "runs/failed2", "runs/pending2"]

BASE = ("defaults: {model: mlp, dataset: synthetic, device: cpu, threads_per_rank: 1, epochs: 2,\n"
        "           train_samples: 256, test_samples: 64, batch_per_rank: 32, optimizer: sgd}\n")
GRIDS = {
    "done4": "name: done4\n" + BASE + "grid:\n  ranks: [1, 2]\n  lr: [0.05, 0.1]\n",
    "deep4": "name: deep4\n" + BASE + "grid:\n  ranks: [1, 2]\n  lr: [0.05, 0.1]\n",
    "failed2": "name: failed2\n" + BASE + "grid:\n  lr: [0.05, 0.1]\n",
    "pending2": "name: pending2\n" + BASE + "grid:\n  lr: [0.05, 0.1]\n",
    "cmp": "name: cmp\ncompare: {by: lr}\n" + BASE.replace("epochs: 2", "epochs: 2, ranks: 1")
           + "grid:\n  lr: [0.05, 0.1]\nseeds: [0]\n",
}


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


def run(*argv, cwd):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300, cwd=cwd)


def gridrun(*args, cwd):
    return run(GRIDRUN, *args, cwd=cwd)


def tree(root):
    """Every file under root with its size and mtime, but a run's summary cache (.cache/, which ls keeps):
    what ls must leave as it was."""
    out = {}
    for folder, subs, files in os.walk(root):
        subs[:] = [d for d in subs if d != ".cache"]
        for f in files:
            p = os.path.join(folder, f)
            st = os.stat(p)
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return out


def ls_json(tmp, *args):
    p = gridrun("ls", *args, "-f", "json", cwd=tmp)
    check(p.returncode == 0, f"ls {' '.join(args)} -f json: exit {p.returncode}: {p.stderr[:300]}")
    try:
        return {r["path"]: r for r in json.loads(p.stdout)}
    except ValueError:
        check(False, f"ls -f json is no JSON: {p.stdout[:300]!r}")
        return {}


def make_runs(tmp):
    for name, text in GRIDS.items():
        with open(os.path.join(tmp, name + ".yaml"), "w") as f:
            f.write(text)
    fake = os.path.join(tmp, "fail.sh")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho 'fake trainer: exits at once' >&2\nexit 1\n")
    os.chmod(fake, 0o755)
    steps = [
        ([MAKE_RUN, "done4.yaml", "runs"], 0),
        ([MAKE_RUN, "deep4.yaml", "runs/deeper"], 0),
        ([GRIDRUN, "run", "failed2.yaml", "--out", "runs", "--train-bin", fake, "--retries", "0",
          "--no-report"], 1),
        ([GRIDRUN, "submit", "pending2.yaml", "--slurm", "--out", "runs", "--dry-run"], 0),
        ([GRIDRUN, "run", "cmp.yaml", "--out", "runs", "--train-bin", TRAIN, "--no-report"], 0),
    ]
    for argv, want in steps:
        p = run(*argv, cwd=tmp)
        if not check(p.returncode == want, f"{' '.join(map(str, argv[:3]))}: exit {p.returncode}, expected "
                                           f"{want}: {p.stderr[-500:]}"):
            return False
    os.makedirs(os.path.join(tmp, "runs", "not-a-run", "empty"))
    return True


def check_ls(tmp):
    before = tree(os.path.join(tmp, "runs"))
    rows = ls_json(tmp, "runs")
    check(sorted(rows) == RUNS, f"ls runs lists {sorted(rows)}, expected {RUNS}")
    want = {"runs/done4": (4, 4, 0, 0, 0), "runs/failed2": (2, 0, 2, 0, 0),
            "runs/pending2": (2, 0, 0, 0, 2), "runs/cmp": (2, 2, 0, 0, 0)}
    for path, (jobs, done, failed, running, pending) in want.items():
        r = rows.get(path, {})
        got = tuple(r.get(k) for k in ("jobs", "done", "failed", "running", "pending"))
        check(got == (jobs, done, failed, running, pending),
              f"{path}: jobs/done/failed/running/pending {got}, expected {(jobs, done, failed, running, pending)}")
        check(r.get("problem") is None, f"{path}: problem {r.get('problem')!r}")
        check(r.get("name") == path.split("/")[-1], f"{path}: name {r.get('name')!r}")
        check(r.get("grid_file") == path + "/grid.yaml", f"{path}: grid_file {r.get('grid_file')!r}")
        when = r.get("last_change") or ""
        try:
            datetime.datetime.strptime(when, "%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            check(False, f"{path}: last_change {when!r} is not ISO 8601 UTC")
        check(isinstance(r.get("age_s"), (int, float)) and r["age_s"] >= 0, f"{path}: age_s {r.get('age_s')!r}")
    check(rows.get("runs/failed2", {}).get("counts") == {"failed": 2},
          f"failed2 counts {rows.get('runs/failed2', {}).get('counts')}")
    # The verdict is the report's whole verdict (issue 58: the csv kept only its first sentence),
    # the answer its winner and ratio first; runs without compare-by have neither.
    rep = gridrun("report", "runs/cmp", "-f", "json", cwd=tmp)
    tables = json.loads(rep.stdout or "{}").get("tables", [])
    verdict = [" ".join(r["verdict"] for r in t["rows"]) for t in tables if t.get("title") == "Verdict" and t["rows"]]
    check(len(verdict) == 1 and rows.get("runs/cmp", {}).get("verdict") == verdict[0],
          f"cmp verdict {rows.get('runs/cmp', {}).get('verdict')!r}, report's {verdict}")
    answer = rows.get("runs/cmp", {}).get("answer") or ""
    m = re.match(r"(lr=0\.1|lr=0\.05) (\d+\.\d\d)x", answer)
    check(m is not None and verdict and (m.group(1) + " was " + m.group(2) + "x faster" in verdict[0] or
                                         m.group(1) + " wins, " + m.group(2) + "x faster" in verdict[0]),
          f"cmp answer {answer!r} is not the verdict's winner and ratio")
    for path in ("runs/done4", "runs/failed2", "runs/pending2"):
        check(rows.get(path, {}).get("verdict") is None and rows.get(path, {}).get("answer") is None,
              f"{path}: verdict {rows.get(path, {}).get('verdict')!r}")

    # csv: the same rows and values as json.
    p = gridrun("ls", "runs", "--format", "csv", cwd=tmp)
    check(p.returncode == 0, f"ls -f csv: exit {p.returncode}")
    got = list(csv.DictReader(io.StringIO(p.stdout)))
    check([r["path"] for r in got] == RUNS, f"ls -f csv paths {[r['path'] for r in got]}")
    for r in got:
        j = rows.get(r["path"], {})
        for k in ("name", "grid_file", "jobs", "done", "failed", "running", "pending", "last_change",
                  "answer", "verdict", "problem"):
            want_text = "" if j.get(k) is None else str(j.get(k))
            check(r[k] == want_text, f"csv {r['path']} {k}: {r[k]!r}, json {j.get(k)!r}")

    # table: a header, then a line per run with its counts and an age.
    p = gridrun("ls", "runs", "-w", "100", cwd=tmp)
    lines = p.stdout.splitlines()
    check(p.returncode == 0 and lines and lines[0].split()[:2] == ["run", "grid"], f"ls table: {p.stdout[:300]!r}")
    for path in RUNS:
        line = next((l for l in lines if l.startswith(path + " ")), "")
        check(" ago" in line, f"ls table: no line with an age for {path}: {p.stdout[:500]!r}")
    check(all(len(l) <= 100 for l in lines), "ls -w 100: a line wider than 100")
    cmp_line = next((l for l in lines if l.startswith("runs/cmp ")), "")
    check(m is not None and m.group(0) in cmp_line, f"ls -w 100: the answer is not in the cmp row: {cmp_line!r}")

    # Nothing written or removed but each run's summary cache, not even the results folders' index
    # cache; the cache answers the next ls with the same rows.
    after = tree(os.path.join(tmp, "runs"))
    for path in RUNS:
        check(os.path.isfile(os.path.join(tmp, path, ".cache", "summary.json")), f"ls kept no summary of {path}")
    again = ls_json(tmp, "runs")
    for path in RUNS:
        a, b = (dict(x.get(path, {})) for x in (rows, again))
        for d in (a, b):
            d.pop("age_s", None)
        check(a == b, f"ls from the summary cache differs for {path}: {a} vs {b}")
    check(before == after, f"ls changed the runs: {sorted(set(before.items()) ^ set(after.items()))[:6]}")
    check(not os.path.exists(os.path.join(tmp, "runs/done4/results/.gridrun-index")),
          "ls wrote runs/done4/results/.gridrun-index")
    # ls and status share the run's status cache (issue 60: a first ls after a first status read the
    # whole run again): status answers from what ls left, the same as computed afresh (status, unlike
    # ls, may write the results folder's index).
    for path in ("runs/done4", "runs/failed2"):
        cache = os.path.join(tmp, path, ".cache", "status")
        check(os.path.isfile(cache), f"ls kept no status of {path}")
        shared = gridrun("status", path, "-f", "json", cwd=tmp)
        os.remove(cache)
        fresh = gridrun("status", path, "-f", "json", cwd=tmp)
        check(shared.returncode == 0 and shared.stdout == fresh.stdout,
              f"status of {path} from ls's cache differs from a fresh one: {shared.stdout[:300]!r} vs "
              f"{fresh.stdout[:300]!r}")

    # Where it looks: DIR itself as a run, deeper levels with --depth, nothing at depth 0 of a folder.
    check(sorted(ls_json(tmp, "runs/done4")) == ["runs/done4"], "ls RUN_DIR: the run itself")
    deep = ls_json(tmp, "runs", "--depth", "2")
    check(sorted(deep) == sorted(RUNS + ["runs/deeper/deep4"]), f"ls --depth 2: {sorted(deep)}")
    check(deep.get("runs/deeper/deep4", {}).get("done") == 4, "ls --depth 2: deep4 has 4 done")
    check(ls_json(tmp, "runs", "--depth", "0") == {}, "ls --depth 0 of a folder that is no run: none")
    home = ls_json(os.path.join(tmp, "runs"))
    check(sorted(home) == sorted(r[len("runs/"):] for r in RUNS), f"ls in the runs folder: {sorted(home)}")
    for argv, needle in ((["no-such-dir"], "no-such-dir"), (["runs", "--depth", "21"], "--depth"),
                         (["runs", "-f", "xml"], "--format"), (["runs", "--deep", "2"], "--deep")):
        p = gridrun("ls", *argv, cwd=tmp)
        check(p.returncode == 2 and p.stdout == "" and needle in p.stderr,
              f"ls {' '.join(argv)}: exit {p.returncode}, stderr {p.stderr[:200]!r}")
    return rows


def ids_by_lr(tmp, run_dir):
    p = gridrun("export", run_dir, "--what", "jobs", "-f", "json", cwd=tmp)
    return {r["lr"]: r["job_id"] for r in json.loads(p.stdout or "[]")}


def check_only(tmp):
    # status: the matching rows and their counts; parameters typed (lr=0.10 is 0.1), id, status.
    def status(run_dir, *only):
        p = gridrun("status", run_dir, "-f", "json", *only, cwd=tmp)
        check(p.returncode == 0, f"status {run_dir} {' '.join(only)}: exit {p.returncode}: {p.stderr[:300]}")
        return json.loads(p.stdout or "{}")

    done = status("runs/done4", "--only", "ranks=2")
    check(len(done.get("jobs", [])) == 2 and done.get("counts") == {"completed": 2},
          f"status --only ranks=2: {len(done.get('jobs', []))} jobs, counts {done.get('counts')}")
    check(all(j["params"].get("ranks") == "2" for j in done.get("jobs", [])), "status --only ranks=2: other ranks shown")
    one = status("runs/done4", "--only", "ranks=1", "--only", "lr=0.10")
    jobs = one.get("jobs", [])
    check(len(jobs) == 1 and jobs[0]["params"].get("lr") == "0.1" and jobs[0]["params"].get("ranks") == "1",
          f"status --only ranks=1 --only lr=0.10: {[j['params'] for j in jobs]}")
    if jobs:
        by_id = status("runs/done4", "--only", "id=" + jobs[0]["id"])
        check([j["id"] for j in by_id.get("jobs", [])] == [jobs[0]["id"]], "status --only id=ID")
    check(len(status("runs/failed2", "--only", "status=failed").get("jobs", [])) == 2, "status --only status=failed")
    p = gridrun("status", "runs/done4", "--only", "lr=0.2", cwd=tmp)
    check(p.returncode == 0 and "matches none" in p.stderr, f"status --only lr=0.2 (none): {p.stderr[:200]!r}")

    ids = ids_by_lr(tmp, "runs/cmp")
    check(sorted(ids) == [0.05, 0.1], f"export --what jobs of cmp: lr values {sorted(ids)}")
    want = ids.get(0.1)

    # report: --only and its older name --filter select the same job.
    for flag in ("--only", "--filter"):
        p = gridrun("report", "runs/cmp", "-f", "json", flag, "lr=0.10", cwd=tmp)
        tables = json.loads(p.stdout or "{}").get("tables", [])
        jobs_table = next((t for t in tables if t.get("title", "").startswith("Jobs")), {})
        check(p.returncode == 0 and [r["id"] for r in jobs_table.get("rows", [])] == [want],
              f"report {flag} lr=0.10: jobs {[r['id'] for r in jobs_table.get('rows', [])]}, expected [{want}]")

    # export: only the matching job's rows, by parameter or id, csv and json alike.
    p = gridrun("export", "runs/cmp", "--what", "jobs", "--only", "lr=0.1", cwd=tmp)
    got = list(csv.DictReader(io.StringIO(p.stdout)))
    check(p.returncode == 0 and [r["job_id"] for r in got] == [want], f"export --what jobs --only lr=0.1: {got}")
    everything = json.loads(gridrun("export", "runs/cmp", "--what", "steps", "-f", "json", cwd=tmp).stdout or "[]")
    p = gridrun("export", "runs/cmp", "--what", "steps", "-f", "json", "--only", "id=" + str(want), cwd=tmp)
    part = json.loads(p.stdout or "[]")
    check(p.returncode == 0 and part and {r["job_id"] for r in part} == {want}
          and len(part) == sum(1 for r in everything if r["job_id"] == want),
          f"export --what steps --only id=: {len(part)} rows of {sorted({r['job_id'] for r in part})}")

    # One parser: a bad key is exit 2 with a did-you-mean in every command; phases refuse --only.
    for argv in (["status", "runs/done4"], ["report", "runs/cmp"], ["export", "runs/cmp", "--what", "jobs"]):
        p = gridrun(*argv, "--only", "rnaks=1", cwd=tmp)
        check(p.returncode == 2 and p.stdout == "" and "--only rnaks=1" in p.stderr
              and "did you mean 'ranks'?" in p.stderr, f"{argv[0]} --only rnaks=1: exit {p.returncode} {p.stderr[:200]!r}")
    p = gridrun("export", "runs/cmp", "--what", "phases", "--only", "lr=0.1", cwd=tmp)
    check(p.returncode == 2 and "--only" in p.stderr, f"export --what phases --only: exit {p.returncode}")


def check_damaged(tmp, rows):
    # A damaged state.json: that run's row names it, the others are as before, exit 0, and the file
    # stays where it is (ls quarantines nothing).
    # status keeps a settled run's status in .cache/status (issue 60): the second one answers from it,
    # the same; the damage below must still be named by the next one.
    first, second = (gridrun("status", "runs/done4", "-f", "json", cwd=tmp) for _ in range(2))
    check(first.returncode == 0 and first.stdout == second.stdout and
          os.path.isfile(os.path.join(tmp, "runs/done4/.cache/status")),
          f"status twice: exit {first.returncode}, same {first.stdout == second.stdout}, cache kept "
          f"{os.path.isfile(os.path.join(tmp, 'runs/done4/.cache/status'))}")
    state = os.path.join(tmp, "runs/done4/state.json")
    with open(state, "w") as f:
        f.write("{ not json")
    p = gridrun("status", "runs/done4", "-f", "json", cwd=tmp)
    damaged = json.loads(p.stdout or "{}").get("damaged", [])
    check(p.returncode == 0 and any("state.json" in d for d in damaged),
          f"status after state.json was damaged (cached before): exit {p.returncode}, damaged {damaged}")
    now = ls_json(tmp, "runs")
    check(sorted(now) == RUNS, f"ls with a damaged state.json lists {sorted(now)}")
    problem = now.get("runs/done4", {}).get("problem") or ""
    check("state.json" in problem, f"damaged state.json: problem {problem!r}")
    for path in RUNS:
        if path == "runs/done4":
            continue
        for k in ("jobs", "done", "failed", "running", "pending", "verdict", "problem"):
            check(now.get(path, {}).get(k) == rows.get(path, {}).get(k),
                  f"{path} {k} changed by another run's damage: {now.get(path, {}).get(k)!r}")
    with open(state) as f:
        check(f.read() == "{ not json", "ls changed or moved the damaged state.json")
    p = gridrun("ls", "runs", cwd=tmp)
    line = next((l for l in p.stdout.splitlines() if l.startswith("runs/done4 ")), "")
    check(p.returncode == 0 and "problem" in line, f"ls table, damaged run: {line!r}")

    # A results file that cannot be read: the report's skipped line is the row's problem; the file
    # is neither moved nor quarantined (that is `gridrun run`'s).
    results = os.path.join(tmp, "runs/deeper/deep4/results")
    victim = sorted(f for f in os.listdir(results) if f.endswith(".h5"))[0]
    with open(os.path.join(results, victim), "r+b") as f:
        f.truncate(100)
    before = tree(os.path.join(tmp, "runs/deeper"))
    deep = ls_json(tmp, "runs", "--depth", "2")
    problem = deep.get("runs/deeper/deep4", {}).get("problem") or ""
    check(victim in problem, f"unreadable {victim}: deep4's problem {problem!r}")
    check(sorted(deep) == sorted(RUNS + ["runs/deeper/deep4"]), f"ls --depth 2 with an unreadable file: {sorted(deep)}")
    check(tree(os.path.join(tmp, "runs/deeper")) == before, "ls changed runs/deeper (quarantine or index)")


def main():
    tmp = tempfile.mkdtemp(prefix="gridrun-ls-")
    try:
        if make_runs(tmp):
            rows = check_ls(tmp)
            check_only(tmp)
            check_damaged(tmp, rows)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILED:
        print(f"{len(FAILED)} failure(s)")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
