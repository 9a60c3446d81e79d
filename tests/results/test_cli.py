#!/usr/bin/python3
"""Scenario test of `gridrun collect` and `gridrun report` as a user runs them: --help, the four
formats (parsed back with csv/json), slicing flags, and bad input (exit 2, message names the flag
or path, nothing written). Usage: test_cli.py --gridrun PATH --testwriter PATH
"""
import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

failures = []
TEMP_DIRS = []  # removed at exit


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gridrun", required=True)
    ap.add_argument("--testwriter", required=True)
    a = ap.parse_args()
    g = a.gridrun
    tmp = tempfile.mkdtemp(prefix="gridrun-cli-")
    TEMP_DIRS.append(tmp)
    rd = os.path.join(tmp, "r")
    subprocess.run([a.testwriter, "run", rd], check=True)

    for cmd in ["collect", "report"]:
        p = run(g, cmd, "--help")
        check(p.returncode == 0, f"{cmd} --help rc")
        check(all(len(l) <= 100 for l in p.stdout.splitlines()), f"{cmd} --help fits 100 columns")
    p = run(g, "report", "--help")
    for flag in ["--format", "--group-by", "--filter", "--width"]:
        check(flag in p.stdout, f"report --help documents {flag}")

    p = run(g, "collect", rd)
    check(p.returncode == 0 and os.path.exists(os.path.join(rd, "results.h5")), "collect writes results.h5")
    check("indexed 10 job(s)" in p.stderr, f"collect summary line: {p.stderr}")

    p = run(g, "report", rd)
    check(p.returncode == 0, "report rc 0")
    check(all(len(l) <= 100 for l in p.stdout.splitlines()), "report fits 100 columns")
    for title in ["Jobs", "Scaling over ranks", "GPU vs CPU", "Convergence", "Phases ("]:
        check(title in p.stdout, f"report has table {title}")

    p = run(g, "report", os.path.join(rd, "results.h5"), "--format", "json")
    tables = json.loads(p.stdout)["tables"]
    scaling = [t for t in tables if t["title"] == "Scaling over ranks"][0]
    eff = {r["ranks"]: r["efficiency"] for r in scaling["rows"]}
    check(eff[1] == 1 and 0 < eff[4] < eff[2] < 1, f"weak-scaling efficiency decreases: {eff}")

    p = run(g, "report", rd, "--format", "csv", "--filter", "device=gpu")
    # The verdict section comes first (the synthetic run compares phases); the jobs table after it.
    first = [s for s in p.stdout.split("\n\n") if s.startswith("# Jobs")][0].splitlines()
    check(p.stdout.startswith("# Verdict\nverdict\n"), "csv: the verdict section first")
    rows = list(csv.DictReader(io.StringIO("\n".join(first[1:]))))
    check([r["id"] for r in rows] == ["gpu-r1-s0", "gpu-r1-s1"], f"--filter device=gpu: {rows}")

    p = run(g, "report", rd, "--format", "markdown", "--group-by", "device")
    check("### Jobs [device=cpu]" in p.stdout and "### Jobs [device=gpu]" in p.stdout, "--group-by device")

    # Bad input: exit 2, the flag or path named.
    for argv, needle in [(["report", rd, "--format", "xml"], "--format xml"),
                         (["report", rd, "--filter", "colour=red"], "colour"),
                         (["report", rd, "--filter", "novalue"], "--filter novalue"),
                         (["report", os.path.join(tmp, "nope")], "nope"),
                         (["collect", os.path.join(tmp, "nope")], "nope"),
                         (["collect"], "RUN_DIR")]:
        p = run(g, *argv)
        check(p.returncode == 2, f"{argv}: rc 2, got {p.returncode}")
        check(needle in p.stderr, f"{argv}: stderr names {needle!r}: {p.stderr}")
    check(not os.path.exists(os.path.join(tmp, "nope")), "nothing written for a bad run dir")

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("cli checks passed")
    return 0


if __name__ == "__main__":
    try:
        code = main()
    finally:
        os.chdir("/")
        for d in TEMP_DIRS:
            shutil.rmtree(d, ignore_errors=True)
    sys.exit(code)
