#!/usr/bin/python3
"""Stored numbers are checked (issue 45, finding 9): every numeric dataset of a job file carries
HDF5's Fletcher32 checksum, so one flipped bit in a dataset's data is a damaged file that
`gridrun report` and `gridrun export` name on stderr ("fails its checksum") and leave out, never a
silently different figure. The flips land in the data of /summary/samples_per_s (one job) and
/epochs/test_acc (another), found with h5py's chunk index; every number exported for the other
jobs stays as it was.

Usage: e2e_checksum.py GRIDRUN TESTWRITER
"""
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

GRIDRUN, TESTWRITER = sys.argv[1:3]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def flip(path, dataset, byte=6, bit=4):
    """Flips one bit inside the first chunk of `dataset` (its stored data, not metadata)."""
    with h5py.File(path, "r") as f:
        ds = f[dataset]
        check(ds.fletcher32, f"{path}:{dataset} carries a Fletcher32 checksum")
        info = ds.id.get_chunk_info(0)
    with open(path, "r+b") as f:
        f.seek(info.byte_offset + byte)
        b = f.read(1)[0]
        f.seek(info.byte_offset + byte)
        f.write(bytes([b ^ (1 << bit)]))


def export(rd, what):
    p = subprocess.run([GRIDRUN, "export", rd, "--what", what], capture_output=True, text=True)
    check(p.returncode == 0, f"export --what {what}: exit 0, got {p.returncode}: {p.stderr}")
    return list(csv.DictReader(io.StringIO(p.stdout))), p.stderr


def main():
    tmp = tempfile.mkdtemp(prefix="gridrun-checksum-")
    try:
        rd = os.path.join(tmp, "r")
        subprocess.run([TESTWRITER, "run", rd], check=True, capture_output=True)
        jobs_before, _ = export(rd, "jobs")
        epochs_before, _ = export(rd, "epochs")
        check(any(r["job_id"] == "cpu-r1-s0" for r in jobs_before), "the undamaged export has cpu-r1-s0")
        flip(os.path.join(rd, "results", "cpu-r1-s0.h5"), "summary/samples_per_s")
        flip(os.path.join(rd, "results", "cpu-r2-s0.h5"), "epochs/test_acc")

        for what, before in (("jobs", jobs_before), ("epochs", epochs_before)):
            rows, err = export(rd, what)
            for jid in ("cpu-r1-s0", "cpu-r2-s0"):
                check(f"{jid}.h5" in err and "fails its checksum" in err,
                      f"export --what {what} names {jid} as damaged: {err}")
                check(not any(r["job_id"] == jid for r in rows), f"export --what {what} leaves {jid} out")
            kept = [r for r in before if r["job_id"] not in ("cpu-r1-s0", "cpu-r2-s0")]
            check(rows == kept, f"export --what {what}: every other number as before")

        p = subprocess.run([GRIDRUN, "report", rd], capture_output=True, text=True)
        check(p.returncode == 0, f"report: exit 0, got {p.returncode}")
        for jid in ("cpu-r1-s0", "cpu-r2-s0"):
            check(f"{jid}.h5" in p.stderr and "fails its checksum" in p.stderr, f"report names {jid}: {p.stderr}")
            check(jid not in p.stdout, f"report leaves {jid} out of its tables")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("checksum checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
