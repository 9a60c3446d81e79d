#!/usr/bin/env python3
"""Golden-output test of `gridrun report` on HDF5 files produced by real training runs.

Runs examples/quickstart.yaml with the real `gridrun run` (real mpirun, real gridrun-train, 1 thread
per rank, so training is deterministic), then compares the report's deterministic columns (ids,
parameters, status, epochs, accuracies, the shape of the scaling and convergence tables) with
golden/quickstart_real.csv. Timing columns vary from run to run and are left out.

    real_golden.py GRIDRUN EXAMPLES_DIR GOLDEN [--update]
"""
import csv
import io
import subprocess
import sys
import tempfile

gridrun, examples, golden = sys.argv[1:4]
update = "--update" in sys.argv[4:]
KEEP = {"Jobs": 7, "Scaling over ranks": 5, "Convergence": None}  # leading columns to compare

with tempfile.TemporaryDirectory() as tmp:
    run = subprocess.run([gridrun, "run", f"{examples}/quickstart.yaml", "--out", tmp],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stdout[-3000:], run.stderr[-3000:])
        sys.exit(f"FAIL: gridrun run exited {run.returncode}")
    rep = subprocess.run([gridrun, "report", f"{tmp}/quickstart", "--format", "csv"],
                         capture_output=True, text=True, check=True).stdout

out, title = [], None
for line in rep.splitlines():
    if line.startswith("# "):
        title = line[2:]
        if title in KEEP:
            out.append(line)
        continue
    if title not in KEEP or not line.strip():
        continue
    row = next(csv.reader(io.StringIO(line)))
    n = KEEP[title]
    out.append(",".join(row[:n] if n else row))
text = "\n".join(out) + "\n"

if update:
    open(golden, "w").write(text)
    print("updated", golden)
    sys.exit(0)
want = open(golden).read()
if text != want:
    print("--- expected\n" + want + "--- got\n" + text)
    sys.exit("FAIL: report of the real quickstart run differs from " + golden)
print(f"ok: report of a real quickstart run matches {golden} ({len(out)} lines)")
