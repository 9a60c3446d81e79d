#!/usr/bin/env python3
"""A finished run started again, reported again (issue 60): what stays the same is answered from
what the last command kept, and any change of the run's files, the grid or the options is seen.

A run of 6 finished jobs written by gridrun-test-make-run (the real JobWriter, no training):
  - the writers left their records in results/.gridrun-journal: the first `gridrun run` adopts
    them (0 to run), puts them into the results index and empties the journal;
  - a second `gridrun run` prints exactly what the first printed (its lines and its report), and
    `gridrun report` twice prints the same tables; status counts 6 completed;
  - another --policy is not the same run: its own head line;
  - a results file changed in place (bytes overwritten, same size) is read again: `run` names it
    damaged and runs its job again (a trainer that exits 1: "1 to run"), not the kept lines; the
    report after it differs;
  - a results file removed: its job runs again;
  - a status after 2 results files were written again (failed, another host) reads those 2 alone
    and equals one computed afresh (json, csv, table);
  - status --state failed shows and counts the 2 failed jobs, --limit 2 two rows with a note and
    every count, a bad --state exits 2 naming the flag.

    e2e_settled.py GRIDRUN GRIDRUN_TEST_MAKE_RUN
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

GRIDRUN, MAKE_RUN = (os.path.abspath(a) for a in sys.argv[1:3])
FAILED = []

GRID = ("name: done6\n"
        "defaults: {model: mlp, dataset: synthetic, device: cpu, threads_per_rank: 1, epochs: 1,\n"
        "           train_samples: 64, test_samples: 32, batch_per_rank: 32}\n"
        "grid:\n  lr: [0.05, 0.1, 0.2]\nseeds: [0, 1]\n")


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


def run(*argv, cwd):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300, cwd=cwd)


def main():
    tmp = tempfile.mkdtemp(prefix="gridrun-settled-")
    try:
        with open(os.path.join(tmp, "done6.yaml"), "w") as f:
            f.write(GRID)
        made = run(MAKE_RUN, "done6.yaml", "runs", cwd=tmp)
        if not check(made.returncode == 0, f"make-run: {made.stderr}"):
            return 1
        results = os.path.join(tmp, "runs/done6/results")
        journal = os.path.join(results, ".gridrun-journal")
        check(os.path.isfile(journal), "the writers left a journal")
        fail = os.path.join(tmp, "fail.sh")
        with open(fail, "w") as f:
            f.write("#!/bin/sh\nexit 1\n")
        os.chmod(fail, 0o755)
        argv = [GRIDRUN, "run", "done6.yaml", "--out", "runs", "--train-bin", fail, "--retries", "0",
                "--launch", "cold", "--width", "100"]

        first = run(*argv, cwd=tmp)
        check(first.returncode == 0, f"first run exits 0: {first.returncode} {first.stderr}")
        check("(6 already completed, 0 to run)" in first.stdout, f"first run adopts all 6: {first.stdout[:300]}")
        check("Jobs" in first.stdout, "the first run ends with its report")
        check(not os.path.exists(journal), "the journal is emptied once the index holds its records")
        check(os.path.isfile(os.path.join(results, ".gridrun-index")), "the results index is written")
        # collect and the closing report share one read of the job files: results.h5 holds the 6
        # jobs, and the report is kept although collect rewrote results.h5 after that read.
        with h5py.File(os.path.join(tmp, "runs/done6/results.h5"), "r") as f:
            check(len(f["jobs/id"]) == 6, f"results.h5 indexes the 6 jobs: {len(f['jobs/id'])}")
        check(os.path.isfile(os.path.join(tmp, "runs/done6/.cache/report")), "the closing report is kept")

        second = run(*argv, cwd=tmp)
        check(second.returncode == 0, "second run exits 0")
        check(second.stdout == first.stdout, "a second run with nothing to do prints what the first printed:\n"
              + second.stdout[:400])
        rep1 = run(GRIDRUN, "report", "runs/done6", "--width", "100", cwd=tmp)
        rep2 = run(GRIDRUN, "report", "runs/done6", "--width", "100", cwd=tmp)
        check(rep1.returncode == 0 and rep1.stdout == rep2.stdout, "report twice: the same tables")
        check(rep1.stdout.count("completed") >= 6, "the report shows the 6 completed jobs")
        st = run(GRIDRUN, "status", "runs/done6", "--format", "json", cwd=tmp)
        check(st.returncode == 0 and '"completed": 6' in st.stdout.replace('"completed":6', '"completed": 6'),
              f"status counts 6 completed: {st.stdout[:200]}")

        # A status after 2 results files were written again (failed now, on another host) is brought
        # up to date from those 2 files (the status cache keeps each file's stamp): the same as a
        # status computed afresh, and the results index is not rewritten for them (a whole merge
        # would bring it up to date). On a copy, so that the run above stays as it was.
        shutil.copytree(os.path.join(tmp, "runs/done6"), os.path.join(tmp, "copy/done6"))
        cres = os.path.join(tmp, "copy/done6/results")
        for _ in range(2):
            run(GRIDRUN, "status", "copy/done6", cwd=tmp)  # the first merges and caches
        cache = os.path.join(tmp, "copy/done6/.cache/status")
        check(os.path.isfile(cache), "status keeps the run's status cache")
        index_before = os.stat(os.path.join(cres, ".gridrun-index")).st_mtime_ns
        made = run(MAKE_RUN, "done6.yaml", "copy", "--rewrite", "2", "--fail", cwd=tmp)
        check(made.returncode == 0, f"make-run --rewrite 2 --fail: {made.stderr}")
        views = (["--format", "json"], ["--format", "csv"], ["--width", "200"])
        patched = [run(GRIDRUN, "status", "copy/done6", *v, cwd=tmp) for v in views]
        check(os.stat(os.path.join(cres, ".gridrun-index")).st_mtime_ns == index_before,
              "the status after 2 changed files read those 2 alone (the results index untouched)")
        os.remove(cache)
        fresh = [run(GRIDRUN, "status", "copy/done6", *v, cwd=tmp) for v in views]
        for v, p, f in zip(views, patched, fresh):
            check(p.returncode == 0 and p.stdout == f.stdout,
                  f"status {' '.join(v)} brought up to date = computed afresh:\n{p.stdout}\n---\n{f.stdout}")
        doc = json.loads(patched[0].stdout) if patched[0].returncode == 0 else {}
        check(doc.get("counts") == {"completed": 4, "failed": 2}, f"2 failed, 4 completed: {doc.get('counts')}")
        hosts = [r.get("attempt_hosts") for r in doc.get("jobs", []) if r.get("state") == "failed"]
        check(len(hosts) == 2 and all(h and h[-1] == "elsewhere" for h in hosts),
              f"the failed jobs' attempts on their new host: {hosts}")
        # A results file damaged in place (no rename: only its own stat changes): the same again.
        run(GRIDRUN, "status", "copy/done6", cwd=tmp)  # the cache is current again
        last = os.path.join(cres, sorted(n for n in os.listdir(cres) if n.endswith(".h5"))[-1])
        with open(last, "r+b") as f:
            f.seek(os.path.getsize(last) // 2)
            f.write(b"\xff" * 256)
        patched = run(GRIDRUN, "status", "copy/done6", "--format", "json", cwd=tmp)
        os.remove(cache)
        fresh = run(GRIDRUN, "status", "copy/done6", "--format", "json", cwd=tmp)
        check(patched.returncode == 0 and patched.stdout == fresh.stdout,
              f"status after a file damaged in place = computed afresh:\n{patched.stdout}\n---\n{fresh.stdout}")

        fifo = run(*argv, "--policy", "fifo", cwd=tmp)
        check(fifo.returncode == 0 and "policy fifo" in fifo.stdout, "another --policy: its own head line")

        # One results file changed in place: same size, bytes in its middle overwritten.
        names = sorted(n for n in os.listdir(results) if n.endswith(".h5"))
        victim = os.path.join(results, names[0])
        size = os.path.getsize(victim)
        with open(victim, "r+b") as f:
            f.seek(size // 2)
            f.write(b"\xff" * 64)
        check(os.path.getsize(victim) == size, "the damaged file keeps its size")
        third = run(*argv, cwd=tmp)
        check(third.stdout != first.stdout, "a damaged results file is not answered by the kept lines")
        check("1 to run" in third.stdout, f"the damaged job runs again: {third.stdout[:300]}")
        check(third.returncode != 0, "its trainer fails: exit non-zero")
        rep3 = run(GRIDRUN, "report", "runs/done6", "--width", "100", cwd=tmp)
        check(rep3.stdout != rep1.stdout, "the report after the change differs")

        # A results file removed: its job runs again.
        os.remove(os.path.join(results, names[1]))
        fourth = run(*argv, cwd=tmp)
        check("to run)" in fourth.stdout and "0 to run)" not in fourth.stdout,
              f"a removed results file's job runs again: {fourth.stdout[:300]}")

        # status --state and --limit: the failed ones (their trainer exits 1), the first rows.
        failed = run(GRIDRUN, "status", "runs/done6", "--state", "failed", "--format", "json", cwd=tmp)
        doc = json.loads(failed.stdout) if failed.returncode == 0 else {}
        rows = doc.get("jobs", [])
        check(len(rows) == 2 and all(r.get("state") == "failed" for r in rows),
              f"--state failed: the 2 failed jobs only: {[r.get('state') for r in rows]}")
        check(doc.get("counts") == {"failed": 2}, f"--state counts the shown state: {doc.get('counts')}")
        limited = run(GRIDRUN, "status", "runs/done6", "--limit", "2", "--format", "json", cwd=tmp)
        doc = json.loads(limited.stdout) if limited.returncode == 0 else {}
        check(len(doc.get("jobs", [])) == 2, "--limit 2: 2 rows")
        check(sum(doc.get("counts", {}).values()) == 6, f"--limit keeps the counts: {doc.get('counts')}")
        check(any("2 of 6 jobs shown" in n for n in doc.get("notes", [])), f"--limit's note: {doc.get('notes')}")
        bad = run(GRIDRUN, "status", "runs/done6", "--state", "finished", cwd=tmp)
        check(bad.returncode == 2 and "--state" in bad.stderr, f"a bad --state exits 2 naming it: {bad.stderr}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("e2e_settled:", "FAILED " + str(len(FAILED)) if FAILED else "ok")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
