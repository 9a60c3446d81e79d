#!/usr/bin/python3
"""Data files that reach elsewhere or lie are refused by the real `gridrun plan` (issue 45,
finding 7), and a data file's content, not its path, is in the job id.

Each hostile file is made with h5py as a user would: an external link, a virtual data set whose
source file is missing (it read as the fill value and the job "completed" on constant input),
external raw storage, 2^34 declared rows in a small file (plan took 223 s and exited 0), 2^30
declared labels of which one chunk is written, and labels of 2^31+5 and INT64_MAX. Each must be
exit 2 with one line naming the file and the data set. Hangs are bounded by a 120 s timeout per
command (a guard, not a timing assertion). Then identity: new bytes under the same name give
another id (data_sha256 = the file's SHA-256), the old bytes back give the old id, and the same
file and grid in another folder keep it.

Usage: e2e_data_file_plan.py GRIDRUN
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

GRIDRUN = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def good(path, labels=None):
    """A small valid file: float32 x [8, 3], int64 labels (given, or 0..3 repeated)."""
    y = np.arange(8, dtype=np.int64) % 4 if labels is None else np.asarray(labels, dtype=np.int64)
    with h5py.File(path, "w") as f:
        f["train/x"] = np.ones((len(y), 3), dtype=np.float32)
        f["train/y"] = y


def plan(folder, data_file):
    """`gridrun plan` of a one-job grid in `folder` reading `data_file`: (exit code, stdout, stderr)."""
    grid = os.path.join(folder, "grid.yaml")
    with open(grid, "w") as g:
        g.write("name: d\ndefaults: {dataset: hdf5, data_file: %s, model: mlp, epochs: 1}\n" % data_file)
    try:
        r = subprocess.run([GRIDRUN, "plan", grid, "--format", "json"], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, XDG_CACHE_HOME=os.path.join(folder, "cache")))
    except subprocess.TimeoutExpired:
        return None, "", "timed out after 120 s"
    return r.returncode, r.stdout, r.stderr


def make_hostile(d):
    """name -> (file, the text its refusal must contain)."""
    cases = {}
    other = os.path.join(d, "other.h5")
    good(other)

    p = os.path.join(d, "elink.h5")
    with h5py.File(p, "w") as f:
        f["train/x"] = h5py.ExternalLink("other.h5", "/train/x")
        f["train/y"] = np.arange(8, dtype=np.int64) % 4
    cases["external link"] = (p, p + ": /train/x is an external link to 'other.h5':/train/x (expected the "
                                  "data stored in this file")

    p = os.path.join(d, "vds.h5")
    layout = h5py.VirtualLayout(shape=(8, 3), dtype=np.float32)
    layout[:] = h5py.VirtualSource("missing.h5", "x", shape=(8, 3))
    with h5py.File(p, "w") as f:
        f.create_virtual_dataset("train/x", layout, fillvalue=0)
        f["train/y"] = np.arange(8, dtype=np.int64) % 4
    cases["virtual data set, source missing"] = (
        p, p + ": /train/x is a virtual data set whose rows come from 'missing.h5'")

    p = os.path.join(d, "external.h5")
    np.ones((8, 3), dtype=np.float32).tofile(os.path.join(d, "raw.bin"))
    with h5py.File(p, "w") as f:
        f.create_dataset("train/x", shape=(8, 3), dtype=np.float32, external=[("raw.bin", 0, 8 * 3 * 4)])
        f["train/y"] = np.arange(8, dtype=np.int64) % 4
    cases["external storage"] = (p, p + ": /train/x keeps its values in the external file 'raw.bin'")

    p = os.path.join(d, "rows34.h5")
    with h5py.File(p, "w") as f:
        x = f.create_dataset("train/x", shape=(2**34, 4), dtype=np.uint8, chunks=(2**16, 4), compression="gzip")
        y = f.create_dataset("train/y", shape=(2**34,), dtype=np.int64, chunks=(2**16,), compression="gzip")
        x[:8] = 1
        y[:8] = np.arange(8) % 4
    cases["2^34 rows declared"] = (p, p + ": /train/x has shape [17179869184, 4] (expected at most "
                                      "2147483647 rows)")

    p = os.path.join(d, "rows30.h5")
    with h5py.File(p, "w") as f:
        x = f.create_dataset("train/x", shape=(2**30, 1), dtype=np.uint8, chunks=(2**20, 1), compression="gzip")
        y = f.create_dataset("train/y", shape=(2**30,), dtype=np.uint8, chunks=(2**20,), compression="gzip")
        x[:8] = 1
        y[:8] = np.arange(8) % 4
    cases["2^30 rows declared, one chunk written"] = (
        p, p + ": /train/x declares [1073741824, 1] (1073741824 bytes) in 1024 chunks, but 1 are stored "
               "(expected every chunk written")

    p = os.path.join(d, "label31.h5")
    good(p, [0, 1, 2**31 + 5, 3])
    cases["label 2^31+5"] = (p, p + ": /train/y[2] is 2147483653 (expected labels in [0, classes) that fit "
                                "int32, i.e. at most 2147483647)")

    p = os.path.join(d, "label63.h5")
    good(p, [0, 1, 2, np.iinfo(np.int64).max])
    cases["label INT64_MAX"] = (p, p + ": /train/y[3] is 9223372036854775807 (expected labels in [0, "
                                   "classes) that fit int32")
    return cases


def main():
    root = tempfile.mkdtemp(prefix="gridrun-data-file-")
    try:
        for what, (path, expect) in make_hostile(root).items():
            rc, out, err = plan(root, path)
            check(rc == 2, f"{what}: exit {rc} (expected 2): {err.strip()[:300]}")
            check(expect in err, f"{what}: stderr lacks {expect!r}: {err.strip()[:400]}")
            check(len(err.strip().splitlines()) == 1, f"{what}: not one line: {err!r}")
            check(out == "", f"{what}: something planned: {out[:200]!r}")
            if rc == 2 and expect in err:
                print(f"ok: {what}: refused")

        # Identity: the content is in the id, the path is not.
        a = os.path.join(root, "a")
        os.mkdir(a)
        data = os.path.join(a, "data.h5")
        good(data)

        def id_and_sha(folder):
            rc, out, err = plan(folder, "data.h5")
            check(rc == 0, f"plan of a good file: exit {rc}: {err.strip()[:300]}")
            job = json.loads(out)["jobs"][0] if rc == 0 else {"id": None, "params": {}}
            return job["id"], job["params"].get("data_sha256"), job["params"].get("data_file")

        first, sha, path = id_and_sha(a)
        with open(data, "rb") as f:
            check(sha == hashlib.sha256(f.read()).hexdigest(), f"data_sha256 {sha} is not the file's SHA-256")
        check(path == data, f"data_file {path} is not the absolute path {data}")
        good(data, [3, 2, 1, 0, 3, 2, 1, 0])
        changed, _, _ = id_and_sha(a)
        check(changed != first, f"new data under the same name kept the id {first}")
        good(data)
        check(id_and_sha(a)[0] == first, "the old bytes back did not give the old id")
        b = os.path.join(root, "b")
        shutil.move(a, b)
        moved, _, moved_path = id_and_sha(b)
        check(moved == first and moved_path == os.path.join(b, "data.h5"),
              f"the folder moved: id {moved} (expected {first}), data_file {moved_path}")
        print(f"ok: identity: {first} for the file, {changed} for new data under its name, {moved} moved")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("data file plan: all hostile files refused, content in the id")
    return 0


if __name__ == "__main__":
    sys.exit(main())
