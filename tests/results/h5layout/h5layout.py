#!/usr/bin/env python3
"""Golden HDF5 layout of a job file: every group, dataset (dtype with its compound fields, rank)
and attribute name (with its type class) of the result files of a real run, read with h5py.

Values (times, losses) vary from run to run and are left out; names, types and nesting may only
change on purpose (docs/results.md is the schema), so a refactoring of the writer that reorders,
renames or retypes anything fails here.

    h5layout.py GRIDRUN GRID GOLDEN [--update]
"""
import glob
import os
import subprocess
import sys
import tempfile

import h5py

gridrun, grid, golden = sys.argv[1:4]
update = "--update" in sys.argv[4:]


def kind(dt):
    if dt.names:
        return "{" + ", ".join(f"{n}:{kind(dt.fields[n][0])}" for n in dt.names) + "}"
    if h5py.check_string_dtype(dt) is not None:
        return "str"
    return dt.kind + str(dt.itemsize)


def layout(path):
    lines = []
    with h5py.File(path, "r") as f:
        def attrs(obj, name):
            for a in sorted(obj.attrs):
                v = obj.attrs[a]
                t = "str" if isinstance(v, (str, bytes)) else kind(getattr(v, "dtype", None)) \
                    if hasattr(v, "dtype") else type(v).__name__
                lines.append(f"  {name}@{a}: {t}")
        attrs(f, "/")

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                lines.append(f"  /{name}: dataset rank {obj.ndim} {kind(obj.dtype)}")
            else:
                lines.append(f"  /{name}: group")
            attrs(obj, "/" + name)
        f.visititems(visit)
    return lines


with tempfile.TemporaryDirectory() as tmp:
    run = subprocess.run([gridrun, "run", grid, "--out", tmp], capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stdout[-3000:], run.stderr[-3000:])
        sys.exit(f"FAIL: gridrun run exited {run.returncode}")
    files = sorted(glob.glob(f"{tmp}/*/results/*.h5"))
    if len(files) != 2:
        sys.exit(f"FAIL: expected 2 job files, found {files}")
    out = []
    for p in files:
        with h5py.File(p, "r") as f:
            task = f.attrs.get("param.task", b"?")
        task = task.decode() if isinstance(task, bytes) else str(task)
        out.append(f"job file ({task}):")
        out += layout(p)
    index = glob.glob(f"{tmp}/*/index.h5")
    for p in index:
        out.append("run index:")
        out += layout(p)
text = "\n".join(out) + "\n"
if update:
    open(golden, "w").write(text)
    print(f"wrote {golden}")
    sys.exit(0)
want = open(golden).read()
if text != want:
    import difflib
    sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                               "golden", "this run"))
    sys.exit("FAIL: HDF5 layout differs from the golden")
print(f"h5 layout equal: {len(out)} lines")
