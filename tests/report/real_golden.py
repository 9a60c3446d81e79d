#!/usr/bin/env python3
"""Golden-output test of `gridrun report` on HDF5 files produced by real training runs.

Runs tests/data/quickstart.yaml (4 jobs on the synthetic set, seconds) with the real `gridrun run`
(real mpirun, real gridrun-train, 1 thread per rank, so training is deterministic), then compares
the report's deterministic columns (ids, parameters, status, epochs, accuracies, the shape of the
scaling and convergence tables) with golden/quickstart_real.csv. Timing columns vary from run to run
and are left out; accuracies may differ by two test samples (ACC_TOL: CPUs' kernels round apart).

A golden is only worth pinning if the runs learned: every job's test accuracy must be above chance
(0.1, 10 classes) by MARGIN, checked before comparing and before --update writes a new golden
(issue 49: the golden once pinned lenet at 0.125, chance, and passed).

    real_golden.py GRIDRUN DATA_DIR GOLDEN [--update]
"""
import csv
import io
import subprocess
import sys
import tempfile

gridrun, examples, golden = sys.argv[1:4]
update = "--update" in sys.argv[4:]
KEEP = {"Jobs": 7, "Scaling over ranks": 5, "Convergence": None}  # leading columns to compare
CHANCE, MARGIN = 0.1, 0.3
ACC_TOL = 2.5 / 256  # two test samples of 256 (see same() below)

with tempfile.TemporaryDirectory() as tmp:
    run = subprocess.run([gridrun, "run", f"{examples}/quickstart.yaml", "--out", tmp],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stdout[-3000:], run.stderr[-3000:])
        sys.exit(f"FAIL: gridrun run exited {run.returncode}")
    rep = subprocess.run([gridrun, "report", f"{tmp}/quickstart", "--format", "csv"],
                         capture_output=True, text=True, check=True).stdout

out, title, accs = [], None, {}
for line in rep.splitlines():
    if line.startswith("# "):
        title = line[2:]
        if title in KEEP:
            out.append(line)
        continue
    if title not in KEEP or not line.strip():
        continue
    row = next(csv.reader(io.StringIO(line)))
    if title == "Jobs" and row[0] != "id":
        accs[row[0]] = float(row[row_head.index("test_acc")])
    elif title == "Jobs":
        row_head = row
    n = KEEP[title]
    out.append(",".join(row[:n] if n else row))
text = "\n".join(out) + "\n"

print("test accuracies:", accs)
low = {j: a for j, a in accs.items() if not a > CHANCE + MARGIN}
if len(accs) != 4 or low:
    print(rep)
    sys.exit(f"FAIL: {len(accs)} jobs (expected 4); test accuracy not above chance {CHANCE} + {MARGIN}: {low}")

if update:
    open(golden, "w").write(text)
    print("updated", golden)
    sys.exit(0)
want = open(golden).read()


def same(got_line, want_line):
    """Equal text, except that numbers may differ by ACC_TOL: accuracies of 256 test samples move by a
    sample or two between CPUs whose BLAS kernels round differently (the same commit gave lenet
    0.734375 on one VM and 0.73828125 on an AVX-512 FP16 one); the shape and ids may not move."""
    g, w = got_line.split(","), want_line.split(",")
    if len(g) != len(w):
        return False
    for a, b in zip(g, w):
        if a == b:
            continue
        try:
            if abs(float(a) - float(b)) <= ACC_TOL:
                continue
        except ValueError:
            pass
        return False
    return True


got_lines, want_lines = text.splitlines(), want.splitlines()
if len(got_lines) != len(want_lines) or not all(same(g, w) for g, w in zip(got_lines, want_lines)):
    print("--- expected\n" + want + "--- got\n" + text)
    sys.exit("FAIL: report of the real quickstart run differs from " + golden)
print(f"ok: report of a real quickstart run matches {golden} ({len(out)} lines)")
