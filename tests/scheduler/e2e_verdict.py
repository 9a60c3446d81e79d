"""Scenarios of the verdict a compare-by run ends with (issue 44), with the real `gridrun run`,
real mpirun and the real gridrun-train.

Usage: e2e_verdict.py GRIDRUN GRIDRUN_TRAIN CASE
  repeats     compare.repeats 3: phases run interleaved (A B | B A | A B), as the event log and
              state.json show; the verdict gives the ratio with its interval and the repeat count.
  disturbed   a CPU hog (processes outside the run, started when phase ranks=1 starts, stopped
              when it ends) makes the verdict call that phase disturbed: inconclusive, with the
              command that measures it again.
  arrangement zip: {ranks: [1, 2], threads_per_rank: [2, 1]}: one job per phase, so the verdict
              names the arrangements and never says "several small" or "one large job".
  diverged    lr 1e6: every job ends "diverged" after one attempt (exit 3, not retried), status
              says so with the reason, and the verdict leaves both phases out.
Synchronisation is by gridrun's event lines on a pipe, never by sleeping. No assertion depends on
how fast the machine is: only on what a hog does to the CPU share and on the order of events.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

GRIDRUN, TRAIN, CASE = sys.argv[1:4]
WORK = tempfile.mkdtemp(prefix="gridrun-e2e-verdict-")
OUT = os.path.join(WORK, "runs")

SMALL = """defaults:
  dataset: synthetic
  device: cpu
  model: mlp
  threads_per_rank: 1
  train_samples: 1024
  test_samples: 128
  batch_per_rank: 32
  lr: 0.05
  epochs: 1
"""


def grid(name, body):
    path = os.path.join(WORK, name + ".yaml")
    with open(path, "w") as f:
        f.write("name: %s\n%s" % (name, body))
    return path


def run(args):
    return subprocess.run([GRIDRUN, "run"] + args + ["--out", OUT, "--train-bin", TRAIN, "--no-report"],
                          text=True, capture_output=True, timeout=600)


def state(name):
    with open(os.path.join(OUT, name, "state.json")) as f:
        return json.load(f)


def report(name):
    """The report's tables as json: (verdict lines, phase rows by label, all tables)."""
    r = subprocess.run([GRIDRUN, "report", os.path.join(OUT, name), "--format", "json"], text=True,
                       capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr
    tables = json.loads(r.stdout)["tables"]
    verdict = [row["verdict"] for t in tables if t["title"] == "Verdict" for row in t["rows"]]
    phases = [t for t in tables if t["title"].startswith("Phases (")]
    rows = {row["phase"]: row for t in phases for row in t["rows"]}
    return verdict, rows, tables


def events(out):
    return [l for l in out.splitlines() if l.startswith("[")]


def case_repeats():
    g = grid("rep", SMALL + "compare: {by: ranks, repeats: 3}\ngrid:\n  ranks: [2, 1]\n")
    r = run([g])
    assert r.returncode == 0, r.stdout + r.stderr
    opened = [m.group(1) for l in events(r.stdout) for m in [re.search(r"\] phase (ranks=\S+(?: #\d)?): ", l)] if m]
    assert opened == ["ranks=2", "ranks=1", "ranks=1 #2", "ranks=2 #2", "ranks=2 #3", "ranks=1 #3"], opened
    st = state("rep")
    by_start = sorted(st["phases"], key=lambda k: st["phases"][k]["start_unix"])
    assert by_start == ["2", "1", "1#2", "2#2", "2#3", "1#3"], by_start
    assert len({p["sitting"] for p in st["phases"].values()}) == 1, st["phases"]
    assert all(0 <= p["other_cpu_share"] <= 1 for p in st["phases"].values()), st["phases"]
    # Each repeat is a job of its own (own id and file) with the same training.
    assert len(st["jobs"]) == 6 and all(j["state"] == "completed" for j in st["jobs"].values()), st["jobs"]
    verdict, rows, _ = report("rep")
    assert len(rows) == 6 and all(row["makespan_s"] > 0 for row in rows.values()), rows
    head = verdict[0]
    m = re.search(r"(\d+\.\d\d)x faster(?: \[(\d+\.\d\d), (\d+\.\d\d)\])?, (\d) (?:interleaved repeats|repeat)\b", head)
    assert m, verdict
    ratio, n = float(m.group(1)), int(m.group(4))
    disturbed = any(v.startswith("Left out of the ratio, disturbed: ") for v in verdict)
    # A repeat disturbed by other work on the machine is left out of the ratio, and said.
    assert n == 3 or disturbed, verdict
    lo, hi = (float(m.group(2)), float(m.group(3))) if m.group(2) else (None, None)
    assert (lo is not None) == (n >= 2), head
    if lo is not None:
        # Two decimals: with 2 repeats (one left out as disturbed) t is 12.7 and the lower bound
        # of a positive ratio can print as 0.00 (CI saw [0.00, 5668.55]).
        assert 0 <= lo <= ratio <= hi, head
    # The ratio is the geometric mean of the per-repeat ratios, slower over faster (by medians).
    mk = {k: v["makespan_s"] for k, v in rows.items()}
    two = [mk["ranks=2"], mk["ranks=2 #2"], mk["ranks=2 #3"]]
    one = [mk["ranks=1"], mk["ranks=1 #2"], mk["ranks=1 #3"]]
    fast, slow = (one, two) if sorted(one)[1] < sorted(two)[1] else (two, one)
    geo = (slow[0] / fast[0] * slow[1] / fast[1] * slow[2] / fast[2]) ** (1 / 3)
    if n == 3:
        assert abs(ratio - geo) < 0.006, (ratio, geo, mk)
        winner = "ranks=1" if fast is one else "ranks=2"
        said = head.split(": ", 1)[1] if ": " in head else head
        assert (": %s win" % winner) in head or ("(%s, " % winner) in said.split(" win")[0].split("; ")[-1] \
            or ("As measured, %s was" % winner) in head, (winner, head)
    # The bounds are printed to two decimals: a conclusive lower bound just above 1 reads "1.00" (the
    # test failed once on "1.04x faster [1.00, 1.07]"), and an inconclusive one never reads more.
    if "inconclusive" in head:
        assert n < 2 or lo <= 1 or "disturbed" in head, head
    else:
        assert n >= 2 and lo >= 1.0, head
    # --repeats replaces the grid's; the phases of the earlier 3 repeats are not the current grid's.
    r = run([g, "--repeats", "2", "--rerun", "all"])
    assert r.returncode == 0, r.stdout + r.stderr
    verdict, rows, _ = report("rep")
    assert set(rows) == {"ranks=2", "ranks=1", "ranks=1 #2", "ranks=2 #2"}, rows
    assert "(median of 2)" in verdict[0] and "0 jobs" not in verdict[0], verdict


def hog():
    """Two busy processes (one per core of the 2-core test machine), outside the run."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(max(2, os.cpu_count() or 2))]


def case_disturbed():
    # ranks=1 runs second; its jobs train long enough (a few seconds) for the hog to be seen.
    g = grid("hog", SMALL.replace("train_samples: 1024", "train_samples: 8192") +
             "compare: {by: ranks}\ngrid:\n  ranks: [2, 1]\n")
    p = subprocess.Popen([GRIDRUN, "run", g, "--out", OUT, "--train-bin", TRAIN, "--no-report"], text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1)
    lines, hogs = [], []
    try:
        for line in p.stdout:
            lines.append(line)
            if "] phase ranks=1: " in line:
                hogs = hog()
            if "] phase ranks=1 done" in line:
                break
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    rest, err = p.communicate(timeout=600)
    assert p.returncode == 0, "".join(lines) + rest + err
    assert hogs, "".join(lines)
    st = state("hog")
    share = st["phases"]["1"]["other_cpu_share"]
    assert share > 0.2, st["phases"]
    verdict, rows, _ = report("hog")
    assert rows["ranks=1"]["other%"] > 20, rows
    head = verdict[0]
    assert ": inconclusive, " in head and "ranks=1 was disturbed" in head, verdict
    line = [v for v in verdict if v.startswith("ranks=1 was measured while")]
    assert line and "--rerun phase=1" in line[0] and "not comparable" in line[0], verdict


def case_arrangement():
    g = grid("zip", SMALL + "compare: {by: ranks}\nzip:\n  ranks: [1, 2]\n  threads_per_rank: [2, 1]\n")
    r = run([g])
    assert r.returncode == 0, r.stdout + r.stderr
    verdict, rows, _ = report("zip")
    assert set(rows) == {"ranks=1", "ranks=2"}, rows
    assert rows["ranks=1"]["ran"] == "1 job x 1 rank x 2 threads", rows
    assert rows["ranks=2"]["ran"] == "1 job x 2 ranks", rows
    head = verdict[0]
    assert "ranks=1 (1 job x 1 rank x 2 threads)" in head and "ranks=2 (1 job x 2 ranks)" in head, head
    text = " ".join(verdict)
    assert "several small" not in text and "one large job" not in text, verdict


def case_diverged():
    g = grid("div", SMALL + "compare: {by: ranks}\ngrid:\n  ranks: [2, 1]\n  lr: [1.0e6]\n")
    r = run([g, "--retries", "2"])
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.count("] diverged ") == 2 and "] retry " not in r.stdout, r.stdout
    st = state("div")
    for jid, rec in st["jobs"].items():
        assert rec["state"] == "diverged" and rec["attempts"] == 1 and rec["exit_codes"] == [3], (jid, rec)
    s = subprocess.run([GRIDRUN, "status", os.path.join(OUT, "div"), "--format", "json"], text=True,
                       capture_output=True, timeout=120)
    assert s.returncode == 0, s.stderr
    js = json.loads(s.stdout)
    assert js["counts"].get("diverged") == 2, js["counts"]
    for job in js["jobs"]:
        assert job["state"] == "diverged" and "training loss" in job["reason"], job
    verdict, rows, _ = report("div")
    assert all(row["ran"] == "not measured" for row in rows.values()) and len(rows) == 2, rows
    assert sum(v.startswith("Left out: ") for v in verdict) == 2, verdict
    assert not any(re.search(r"wins?, |inconclusive", v) for v in verdict), verdict
    # The next run does not try them again (the same seed and lr would diverge again).
    r = run([g])
    assert "] start " not in r.stdout, r.stdout


CASES = {"repeats": case_repeats, "disturbed": case_disturbed, "arrangement": case_arrangement,
         "diverged": case_diverged}

if __name__ == "__main__":
    CASES[CASE]()
    shutil.rmtree(WORK, ignore_errors=True)
