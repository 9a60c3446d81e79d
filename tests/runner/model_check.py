#!/usr/bin/python3
"""Scenario tests of the planner's model check (issues 45 and 49): a model=torchscript grid whose
model cannot be built is refused by `gridrun plan`, `submit --dry-run` and `run` with exit 2 at its
model_file line, before anything is written, queued or launched (the real gridrun and gridrun-train;
models made in the test by own_files.py).

    model_check.py GRIDRUN GRIDRUN_TRAIN SCENARIO [--work DIR]

    bomb         cnn.pt repacked with its largest tensor record deflated from 1 GiB (the original
                 bytes, then zeros): a 1 MB file. `gridrun plan` under `prlimit --data=2GiB` exits 2
                 at the grid's model_file line, naming the record and the archive's decompressed
                 limit; the largest resident set of gridrun and its child stays under 512 MiB, half
                 the record's size (so the record was never inflated into memory). cnn.pt with
                 100,000 empty records added: plan exits 2 at the model_file line naming the
                 record limit.
    wrong_shape  wrong_output.pt (forward returns [N, 4, 2]): plan, submit --slurm --dry-run and run
                 each exit 2 at the model_file line with gridrun-train's reason ("forward returned
                 [2, 4, 2] ..."), and neither submit nor run leaves a run directory; cnn.pt in the
                 same grid plans (exit 0), so the check passes a model that builds.

Exits 0 on success and 1 with a line starting "FAIL" otherwise; no sleeps, no timing assertions.
With --work DIR the files stay in DIR/SCENARIO; without it a temporary folder is removed after a
pass and kept (and printed) after a failure.
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import own_files  # noqa: E402

ARGS = None
BOMB_BYTES = 1 << 30
MAX_RECORDS = 100_000  # runner::kMaxArchiveRecords
DATA_LIMIT = 2 << 30


class Fail(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def gridrun(*args, prefix=(), cwd=None):
    cmd = [*prefix, ARGS.gridrun, *args]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300,
                          cwd=cwd)


def write_grid(path, name, model_file, data_file):
    """A grid whose model_file is on line 4 (returned), so messages can be checked against it."""
    with open(path, "w") as f:
        f.write(f"name: {name}\n"
                "defaults:\n"
                "  model: torchscript\n"
                f"  model_file: {model_file}\n"
                f"  dataset: hdf5\n  data_file: {data_file}\n"
                "  epochs: 1\n  global_batch: 32\n  threads_per_rank: 1\n  device: cpu\n"
                "seeds: [0, 1]\n")
    return 4


def expect_refused(p, what, grid, line, *needles):
    out = p.stdout + p.stderr
    check(p.returncode == 2, f"{what}: exit {p.returncode}, expected 2\n{out[-3000:]}")
    check(f"{os.path.basename(grid)}:{line}:" in out and "model_file" in out,
          f"{what}: the message does not name the grid's model_file line {line}:\n{out[-3000:]}")
    for n in needles:
        check(n in out, f"{what}: the message lacks {n!r}:\n{out[-3000:]}")


def bomb_archive(src, dst):
    """src with its largest tensor record replaced by one deflated from BOMB_BYTES (its own bytes
    first, then zeros), every other record copied as stored; returns the record's name."""
    name, _, _ = own_files.largest_tensor_record(src)
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename != name:
                zout.writestr(zipfile.ZipInfo(info.filename), data, compress_type=zipfile.ZIP_STORED)
                continue
            bomb = zipfile.ZipInfo(name)
            bomb.compress_type = zipfile.ZIP_DEFLATED
            with zout.open(bomb, "w", force_zip64=True) as w:
                w.write(data)
                left = BOMB_BYTES - len(data)
                chunk = bytes(16 << 20)
                while left > 0:
                    w.write(chunk[:min(left, len(chunk))])
                    left -= len(chunk)
    return name


def many_records(src, dst, extra):
    """src with `extra` empty stored records added (zipfile writes the zip64 directory needed)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        prefix = zin.namelist()[0].split("/", 1)[0]
        for info in zin.infolist():
            zout.writestr(zipfile.ZipInfo(info.filename), zin.read(info.filename),
                          compress_type=zipfile.ZIP_STORED)
        for k in range(extra):
            zout.writestr(zipfile.ZipInfo(f"{prefix}/extra/{k}"), b"", compress_type=zipfile.ZIP_STORED)


def scenario_bomb(work, files):
    bomb = os.path.join(work, "bomb.pt")
    record = bomb_archive(files["cnn.pt"], bomb)
    size = os.path.getsize(bomb)
    check(size < 4 << 20, f"{bomb}: {size} bytes, expected a small file")
    with zipfile.ZipFile(bomb) as z:
        check(z.getinfo(record).file_size == BOMB_BYTES, f"{bomb}: {record} does not hold 1 GiB")
    grid = os.path.join(work, "bomb.yaml")
    line = write_grid(grid, "bomb", bomb, files["images.h5"])
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # RLIMIT_DATA (heap and private writable mappings), not RLIMIT_AS: the CUDA build's gridrun-train
    # maps over 2 GiB of shared libraries (read-only code) before it reads a byte, and could not
    # start under --as=2GiB ("failed to map segment"); an inflated record would be private data.
    p = gridrun("plan", grid, prefix=("prlimit", f"--data={DATA_LIMIT}"))
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    expect_refused(p, "plan of the deflate bomb", grid, line, record, "limit", "MiB")
    # ru_maxrss of RUSAGE_CHILDREN: the largest of every waited-for descendant (gridrun, and the
    # gridrun-train it waited for), in KiB; the earlier children of this script were smaller.
    check(peak_kib < 512 << 10, f"peak resident set {peak_kib} KiB (before: {before} KiB), expected "
          f"under 512 MiB for a 1 GiB record")
    print(f"bomb: {size} bytes on disk, {record} 1 GiB inflated: plan exit 2, peak RSS "
          f"{peak_kib // 1024} MiB under prlimit --data={DATA_LIMIT >> 30}GiB")
    print("   ", (p.stderr.strip().splitlines() or [""])[-1])
    many = os.path.join(work, "many.pt")
    many_records(files["cnn.pt"], many, MAX_RECORDS)
    grid = os.path.join(work, "many.yaml")
    line = write_grid(grid, "many", many, files["images.h5"])
    p = gridrun("plan", grid)
    expect_refused(p, "plan of an archive with too many records", grid, line,
                   f"more than the limit of {MAX_RECORDS} records")
    print("   ", (p.stderr.strip().splitlines() or [""])[-1])


def scenario_wrong_shape(work, files):
    good = os.path.join(work, "good.yaml")
    write_grid(good, "good", files["cnn.pt"], files["images.h5"])
    p = gridrun("plan", good)
    check(p.returncode == 0, f"plan of cnn.pt: exit {p.returncode}\n{p.stdout}{p.stderr}")
    grid = os.path.join(work, "wrong.yaml")
    line = write_grid(grid, "wrong", files["wrong_output.pt"], files["images.h5"])
    reason = "forward returned [2, 4, 2]"
    expect_refused(gridrun("plan", grid), "plan", grid, line, reason)
    out = os.path.join(work, "runs")
    expect_refused(gridrun("submit", grid, "--slurm", "--dry-run", "--out", out), "submit --dry-run", grid,
                   line, reason)
    expect_refused(gridrun("run", grid, "--out", out), "run", grid, line, reason)
    left = os.listdir(out) if os.path.isdir(out) else []
    check(not left, f"{out} holds {left} after refused submit and run (expected nothing written)")
    print(f"wrong_shape: plan, submit --dry-run and run exit 2 at {os.path.basename(grid)}:{line}, "
          "nothing written; cnn.pt plans")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("gridrun")
    ap.add_argument("train")
    ap.add_argument("scenario", choices=["bomb", "wrong_shape"])
    ap.add_argument("--work")
    ARGS = ap.parse_args()
    ARGS.gridrun = os.path.abspath(ARGS.gridrun)
    if ARGS.work:
        work = os.path.join(os.path.abspath(ARGS.work), ARGS.scenario)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    else:
        work = tempfile.mkdtemp(prefix=f"gridrun-model-check-{ARGS.scenario}-")
    # gridrun finds gridrun-train next to itself; the test checks that it is the one given.
    here = os.path.join(os.path.dirname(ARGS.gridrun), "gridrun-train")
    if not os.path.samefile(here, ARGS.train):
        print(f"FAIL: {ARGS.train} is not the gridrun-train next to {ARGS.gridrun}")
        return 1
    try:
        files = own_files.make_all(os.path.join(work, "files"))
        {"bomb": scenario_bomb, "wrong_shape": scenario_wrong_shape}[ARGS.scenario](work, files)
    except Fail as e:
        print(f"FAIL: {e}\n(files kept in {work})")
        return 1
    if not ARGS.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
