#!/usr/bin/python3
"""The command-line convention of docs/cli.md, checked on the real binaries (issue 34).

conformance: walks every command `gridrun --help` lists: `CMD --help` and `-h` exit 0 with the
  text on stdout, name the positional arguments in the usage line and under "arguments:" and never
  as a flag; a bad flag exits 2 with the message on stderr and nothing on stdout; `-V/--version`
  of both binaries; `gridrun` alone is a usage error; every command with --format has --width
  and takes them; `status --watch RUN_DIR`; `calibrate --only/--set`; `report --profile RUN_DIR`;
  `ls` of a runs folder and of a run; `--only` of status and report (and report's older --filter).
docs: every flag (long and short) of every command's --help is the list in docs/cli.md, and
  gridrun-train's parameter flags are the grid parameters of `gridrun plan --list-params`.

Usage: cli_conformance.py conformance|docs --gridrun PATH --train PATH --testwriter PATH --docs docs/cli.md
No training: help, flags, dry runs and a results tree written by gridrun-results-testwriter.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def run(*argv, timeout=60):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout)


# "  -o [ --out ] arg (=runs)   ..." or "  --gpus arg   ...": the flags of one --help, by group.
OPTION = re.compile(r"^  (?:-(\w) \[ --([\w-]+) \]|--([\w-]+))")


def help_groups(text):
    """{caption: {long: short or ''}} of the option groups of a --help text."""
    groups, current = {}, None
    for line in text.splitlines():
        if re.match(r"^\S.*:$", line) and not line.startswith("usage:"):
            current = groups.setdefault(line[:-1], {})
            continue
        m = OPTION.match(line)
        if m and current is not None:
            current[m.group(2) or m.group(3)] = m.group(1) or ""
    return groups


def commands(gridrun):
    p = run(gridrun, "--help")
    listed = p.stdout.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in listed.splitlines() if line.strip()]


def usage_line(text):
    return text.splitlines()[0] if text else ""


def check_help(binary, argv, name):
    for flag in ("--help", "-h"):
        p = run(binary, *argv, flag)
        check(p.returncode == 0, f"{name} {flag}: exit {p.returncode}, expected 0")
        check(p.stdout.startswith("usage: "), f"{name} {flag}: stdout does not start with 'usage: '")
        check(p.stderr == "", f"{name} {flag}: wrote to stderr: {p.stderr[:200]}")
        check(all(len(l) <= 100 for l in p.stdout.splitlines()), f"{name} {flag}: a line over 100 columns")
    return p.stdout


def check_positionals(name, text):
    usage = usage_line(text)
    groups = help_groups(text)
    flags = {f for g in groups.values() for f in g}
    args = re.findall(r"^  (\S+)", text.split("arguments:\n", 1)[1].split("\n\n", 1)[0], re.M) \
        if "arguments:\n" in text else []
    placeholders = re.findall(r"\b[A-Z][A-Z_]*(?:\.yaml)?\b", usage.split("[options]")[0])
    # Every positional of the usage line (GRID.yaml, RUN_DIR) is explained under "arguments:" ...
    for ph in placeholders:
        if ph in ("JOB", "DIR", "R"):  # gridrun-train's usage: values of flags, not positionals
            continue
        check(ph in args, f"{name}: usage names {ph} but 'arguments:' does not explain it")
    # ... is in the usage line, and is no flag: not --grid, --run-dir, --input, nor "(positional)".
    for a in args:
        check(a in usage, f"{name}: argument {a} missing from the usage line '{usage}'")
        as_flag = a.split(".")[0].lower().replace("_", "-")
        check(as_flag not in flags, f"{name}: positional {a} listed as the flag --{as_flag}")
    for hidden in ("grid", "run-dir", "input"):
        check(hidden not in flags, f"{name}: positional listed as the flag --{hidden}")
    check("(positional)" not in text, f"{name}: a positional argument listed among the options")
    return groups


def conformance(a):
    g, train = a.gridrun, a.train
    tmp = tempfile.mkdtemp(prefix="gridrun-cli-")
    try:
        # The top level: no command is a usage error; --help is not.
        p = run(g)
        check(p.returncode == 2 and p.stdout == "" and "usage:" in p.stderr,
              f"gridrun alone: exit {p.returncode}, usage on stderr and nothing on stdout expected")
        for flag in ("--help", "-h", "help"):
            p = run(g, flag)
            check(p.returncode == 0 and "commands:" in p.stdout and p.stderr == "", f"gridrun {flag}")
        for binary, name in ((g, "gridrun"), (train, "gridrun-train")):
            for flag in ("-V", "--version"):
                p = run(binary, flag)
                check(p.returncode == 0 and re.fullmatch(name + r" \S+ \(\S+\)\n", p.stdout) is not None,
                      f"{name} {flag}: exit {p.returncode}, stdout {p.stdout!r}")
        p = run(g, "simulte", "x.yaml")
        check(p.returncode == 2 and p.stdout == "" and "did you mean 'simulate'?" in p.stderr,
              f"unknown command: exit {p.returncode}, stderr {p.stderr[:200]!r}")
        p = run(g, "--bogus")
        check(p.returncode == 2 and p.stdout == "", "gridrun --bogus: exit 2, nothing on stdout")

        cmds = commands(g)
        check(len(cmds) >= 11, f"gridrun --help lists {cmds}")
        helps = {}
        for c in cmds:
            text = check_help(g, [c], c)
            helps[c] = text
            check(usage_line(text).startswith(f"usage: gridrun {c}"), f"{c}: usage line '{usage_line(text)}'")
            check("Exit codes:" in text, f"{c} --help: no exit codes")
            groups = check_positionals(c, text)
            flags = groups.get("options", {})
            check(flags.get("help") == "h", f"{c}: --help,-h")
            # A bad flag: exit 2, the message (with the flag) on stderr, nothing on stdout.
            p = run(g, c, "--no-such-flag")
            check(p.returncode == 2 and p.stdout == "" and "--no-such-flag" in p.stderr,
                  f"{c} --no-such-flag: exit {p.returncode}, stdout {p.stdout[:100]!r}, stderr {p.stderr[:200]!r}")
            p = run(g, c, "--hepl")
            check(p.returncode == 2 and "did you mean '--help'?" in p.stderr, f"{c} --hepl: {p.stderr[:200]!r}")
            # Tables: --format and --width come together, spelled -f and -w.
            if "format" in flags and c != "export":
                check(flags.get("width") == "w" and flags.get("format") == "f",
                      f"{c}: --format,-f without --width,-w")
        # simulate is not run: its own text, none of run's flags.
        sim = help_groups(helps["simulate"])["options"]
        for flag in ("retries", "rerun", "dry-run", "no-report", "simulate", "exit-grace"):
            check(flag not in sim, f"simulate --help lists run's --{flag}")
        check("Exit codes: 0 all jobs completed" not in helps["simulate"], "simulate has run's exit codes")
        # One meaning per short flag across all commands.
        meaning = {}
        for c in cmds:
            for long, short in help_groups(helps[c])["options"].items():
                if short:
                    meaning.setdefault(short, set()).add(long)
        for short, longs in meaning.items():
            check(len(longs) == 1, f"-{short} means {sorted(longs)}")

        train_help = check_help(train, [], "gridrun-train")
        check("Exit codes:" in train_help, "gridrun-train --help: no exit codes")
        p = run(train, "--no-such-flag")
        check(p.returncode == 2 and p.stdout == "" and "--no-such-flag" in p.stderr,
              f"gridrun-train --no-such-flag: exit {p.returncode}, stderr {p.stderr[:200]!r}")
        p = run(train, "--epoch", "3")
        check(p.returncode == 2 and "did you mean '--epochs'?" in p.stderr, f"gridrun-train --epoch: {p.stderr[:200]!r}")
        tshort = {s: l for l, s in help_groups(train_help).get("options", {}).items() if s}
        for s, l in tshort.items():
            check(meaning.get(s, {l}) == {l}, f"gridrun-train -{s} is --{l}, gridrun's is {meaning.get(s)}")

        # Commands that print tables take --format and --width (no training: dry runs, a written run).
        grid = os.path.join(tmp, "grid.yaml")
        with open(grid, "w") as f:
            f.write("name: cli\ndefaults: {model: mlp, dataset: synthetic, device: cpu}\n"
                    "grid:\n  ranks: [1, 2]\n")
        out = os.path.join(tmp, "runs")
        for argv in (["plan", grid, "-f", "csv", "-w", "60"], ["plan", grid, "--width", "120"],
                     ["simulate", grid, "--cores", "2", "-o", out, "-f", "json", "-w", "80"],
                     ["simulate", grid, "--cores", "2", "-o", out, "--width", "60"],
                     ["run", grid, "--cores", "2", "-o", out, "-n", "-w", "80", "-f", "table"],
                     ["submit", grid, "--slurm", "-o", out, "-n", "-t", "10"],
                     ["ls", out, "-f", "csv", "-w", "80"], ["ls", out, "--width", "60", "--depth", "2"]):
            p = run(g, *argv)
            check(p.returncode == 0, f"{' '.join(argv[:1] + argv[2:])}: exit {p.returncode}: {p.stderr[:300]}")
        for argv, needle in ((["plan", grid, "-w", "39"], "--width"), (["run", grid, "-f", "xml"], "--format"),
                             (["run", grid, "-n", "-f", "csv"], "--format"),
                             (["simulate", grid, "-f", "csv"], "--format"),
                             (["status", os.path.join(out, "cli"), "-w", "500"], "--width"),
                             (["ls", out, "-w", "39"], "--width"), (["ls", out, "-f", "markdown"], "--format"),
                             (["status", os.path.join(out, "cli"), "--only", "rnaks=1"], "--only rnaks=1"),
                             (["status", os.path.join(out, "cli"), "--only", "ranks"], "--only ranks")):
            p = run(g, *argv)
            check(p.returncode == 2 and p.stdout == "" and needle in p.stderr,
                  f"{' '.join(argv)}: exit {p.returncode}, stderr {p.stderr[:200]!r}")
        rd = os.path.join(out, "cli")  # written by the submit dry run
        p = run(g, "status", rd, "-f", "csv", "-w", "80")
        check(p.returncode == 0 and p.stdout.startswith("id,"), f"status -f csv: {p.returncode} {p.stderr[:200]}")
        # --watch is a switch: it does not take RUN_DIR for its interval (a run no gridrun holds: once).
        for argv in (["status", "--watch", rd, "--interval", "0.1"], ["status", rd, "--watch"]):
            p = run(g, *argv, timeout=30)
            check(p.returncode == 0 and "2 pending" in p.stdout,
                  f"{' '.join(argv)}: exit {p.returncode} {p.stderr[:200]}")
        # ls: the submit dry run is a run of 2 pending jobs; `ls RUN_DIR` lists the run itself.
        for where in (out, rd):
            p = run(g, "ls", where, "-f", "json")
            rows = json.loads(p.stdout or "[]") if p.returncode == 0 else []
            check([(r["name"], r["pending"]) for r in rows] == [("cli", 2)],
                  f"ls {where} -f json: exit {p.returncode}, {p.stdout[:200]!r} {p.stderr[:200]!r}")
        p = run(g, "status", rd, "--only", "ranks=2", "-f", "csv")
        check(p.returncode == 0 and len(p.stdout.splitlines()) == 2, f"status --only ranks=2: {p.stdout[:300]!r}")
        p = run(g, "status", "--watch=2", rd)
        check(p.returncode == 2 and "--watch" in p.stderr, "status --watch=2 (a switch) is refused")
        p = run(g, "status", rd, "--interval", "0")
        check(p.returncode == 2 and "--interval" in p.stderr, "status --interval 0 is refused")

        results = os.path.join(tmp, "written")
        subprocess.run([a.testwriter, "run", results], check=True,
                       capture_output=True)
        p = run(g, "report", results, "-f", "json", "-w", "120")
        check(p.returncode == 0 and "tables" in json.loads(p.stdout or "{}"),
              f"report -f json -w 120: {p.stderr[:200]}")
        # report --only and its older name --filter: one selector, checked before anything is read.
        for flag in ("--only", "--filter"):
            p = run(g, "report", results, flag, "rank=1")
            check(p.returncode == 2 and p.stdout == "" and "did you mean 'ranks'?" in p.stderr,
                  f"report {flag} rank=1: exit {p.returncode}, stderr {p.stderr[:200]!r}")
        p = run(g, "report", "--profile", results)
        check(p.returncode == 0, f"report --profile RUN_DIR (RUN_DIR is no N): exit {p.returncode} {p.stderr[:200]}")
        p = run(g, "report", results, "--profile", "3")
        check(p.returncode == 0, f"report RUN_DIR --profile 3: exit {p.returncode} {p.stderr[:200]}")

        # calibrate --only/--set are checked as for run, before anything is measured.
        for argv, needle in ((["--only", "ranks=3"], "selects none"), (["--set", "rnaks=2"], "did you mean 'ranks'"),
                             (["--slurm", "--only", "ranks=1"], "--only")):
            p = run(g, "calibrate", grid, "--cores", "2", "-o", out, *argv)
            check(p.returncode == 2 and p.stdout == "" and needle in p.stderr,
                  f"calibrate {' '.join(argv)}: exit {p.returncode}, stderr {p.stderr[:200]!r}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def doc_sections(path):
    """{'gridrun CMD' or 'gridrun-train': {long: short}} from docs/cli.md's flag tables."""
    sections, current = {}, None
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^### `(gridrun(?:-train| [\w-]+))`", line)
        if m:
            current = sections.setdefault(m.group(1), {})
            continue
        if line.startswith("## "):
            current = None
        m = re.match(r"^\| `--([\w-]+)` \| (?:`-(\w)`)? *\|", line)
        if m and current is not None:
            check(m.group(1) not in current, f"docs/cli.md: {m.group(1)} twice")
            current[m.group(1)] = m.group(2) or ""
    return sections


def docs(a):
    g, train = a.gridrun, a.train
    documented = doc_sections(a.docs)
    shown = {f"gridrun {c}": help_groups(run(g, c, "--help").stdout)["options"] for c in commands(g)}
    train_groups = help_groups(run(train, "--help").stdout)
    shown["gridrun-train"] = train_groups.get("options", {})
    check(sorted(documented) == sorted(shown),
          f"docs/cli.md documents {sorted(documented)}, the binaries have {sorted(shown)}")
    for name in sorted(set(documented) & set(shown)):
        d, s = documented[name], shown[name]
        for flag in sorted(set(s) - set(d)):
            check(False, f"{name} --{flag}: in --help, not in docs/cli.md")
        for flag in sorted(set(d) - set(s)):
            check(False, f"{name} --{flag}: in docs/cli.md, not in --help")
        for flag in sorted(set(d) & set(s)):
            check(d[flag] == s[flag], f"{name} --{flag}: short '-{s[flag]}' in --help, '-{d[flag]}' in docs/cli.md")
    # gridrun-train's parameter flags: one per grid parameter, nothing else.
    params = [k for k in train_groups if k != "options"]
    check(len(params) == 1, f"gridrun-train --help groups: {list(train_groups)}")
    listed = json.loads(run(g, "plan", "--list-params", "--format", "json").stdout)
    expected = {p["name"].replace("_", "-") for p in listed}
    got = set(train_groups[params[0]]) if params else set()
    check(got == expected, f"gridrun-train parameter flags differ from plan --list-params: "
                           f"{sorted(got ^ expected)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["conformance", "docs"])
    ap.add_argument("--gridrun", required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--testwriter", required=True)
    ap.add_argument("--docs", required=True)
    a = ap.parse_args()
    (conformance if a.mode == "conformance" else docs)(a)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
