"""Every failure of gridrun-train ends in one line on stderr naming the file and the cause, the
job recorded `failed` with that reason in its HDF5 file, and no uncaught exception.

Usage: e2e_failures.py GRIDRUN_TRAIN CASE   (cases: disk_full, unreadable_data, fashion_mnist_files,
bad_job_file,
damaged_results_resume: a damaged results file under --resume is quarantined, not fatal)
"""
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

TRAIN, CASE = sys.argv[1:3]
WORK = tempfile.mkdtemp(prefix="gridrun-e2e-fail-")
SMALL = ["--model", "mlp", "--train-samples", "256", "--test-samples", "64", "--batch-per-rank", "32",
         "--quiet"]


def mpirun(args, env=None, preexec_fn=None):
    cmd = ["mpirun", "-np", "1"] + (["--allow-run-as-root"] if os.geteuid() == 0 else []) + [TRAIN] + args
    return subprocess.run(cmd, text=True, capture_output=True, env=env, preexec_fn=preexec_fn)


def runner_lines(stderr):
    # mpirun adds its own banner; the runner's own lines start with "gridrun-train".
    return [l for l in stderr.splitlines() if l.startswith("gridrun-train")]


def assert_one_line(r, *words):
    assert "terminate called" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    lines = runner_lines(r.stderr)
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def recorded(results_dir):
    files = [f for f in os.listdir(results_dir) if f.endswith(".h5")]
    assert len(files) == 1, os.listdir(results_dir)
    with h5py.File(os.path.join(results_dir, files[0]), "r") as f:
        st, why = f.attrs["status"], f.attrs["exit_reason"]
    dec = lambda v: v.decode() if isinstance(v, bytes) else str(v)
    return dec(st), dec(why)


def case_disk_full():
    # The first checkpoint (6.5 MB for mlp) exceeds a 2 MB file size limit; the results file
    # (about 100 kB) does not. PMIx's shared-memory store would hit the limit in MPI_Init, so it
    # keeps its data in memory (gds=hash).
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (2_000_000, 2_000_000))

    out = os.path.join(WORK, "results")
    env = dict(os.environ, PMIX_MCA_gds="hash")
    r = mpirun(SMALL + ["--epochs", "2", "--out", out], env=env, preexec_fn=limit)
    assert r.returncode == 1, (r.returncode, r.stderr)
    line = assert_one_line(r, "checkpoint ", "state.pt", "File too large")
    st, why = recorded(out)
    assert st == "failed" and "state.pt" in why and "File too large" in why, (st, why)
    assert why in line


def case_unreadable_data():
    data = os.path.join(WORK, "mnist")
    os.makedirs(data)
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                 "t10k-labels-idx1-ubyte"):
        with open(os.path.join(data, name), "wb") as f:
            f.write(os.urandom(1000))
    out = os.path.join(WORK, "results")
    r = mpirun(SMALL + ["--dataset", "mnist", "--data-dir", data, "--epochs", "1", "--out", out])
    assert r.returncode == 2, (r.returncode, r.stderr)
    line = assert_one_line(r, data)
    st, why = recorded(out)
    assert st == "failed" and why in line, (st, why, line)


def case_fashion_mnist_files():
    # Debian's Fashion-MNIST files, one truncated, then one missing: exit 2, one line naming the
    # file, the IDX format and the package; the results folder holds only the failed status.
    src = "/usr/share/datasets/fashion-mnist"
    for n, (damage, word) in enumerate([("truncate", "truncated"), ("remove", "missing data file")]):
        data = os.path.join(WORK, "fm%d" % n)
        shutil.copytree(src, data)
        victim = os.path.join(data, "train-images-idx3-ubyte.gz")
        if damage == "truncate":
            with open(victim, "r+b") as f:
                f.truncate(200_000)
        else:
            os.remove(victim)
        out = os.path.join(WORK, "results%d" % n)
        r = mpirun(SMALL + ["--dataset", "fashion-mnist", "--data-dir", data, "--epochs", "1",
                            "--out", out])
        assert r.returncode == 2, (r.returncode, r.stderr)
        # A missing file is named without its optional .gz suffix ("...-ubyte[.gz]").
        named = victim if damage == "truncate" else victim[:-len(".gz")]
        line = assert_one_line(r, named, word, "MNIST idx format", "dataset-fashion-mnist")
        st, why = recorded(out)
        assert st == "failed" and why in line, (st, why, line)
        assert len(os.listdir(out)) == 1, os.listdir(out)


def case_bad_job_file():
    job = os.path.join(WORK, "bad.json")
    with open(job, "w") as f:
        f.write('{"id": "x", "params": {')
    out = os.path.join(WORK, "results")
    r = subprocess.run([TRAIN, "--job", job, "--out", out], text=True, capture_output=True)
    assert r.returncode == 2, (r.returncode, r.stderr)
    line = assert_one_line(r, job)
    assert "--job" in line
    # Without a readable job there is no job id, so no results file can name the failure.
    assert not os.path.exists(out) or not os.listdir(out)


def case_damaged_results_resume():
    # Run by hand with --resume over a damaged results file: gridrun-train moves it aside with a
    # warning and starts a new file at the resumed step instead of dying in H5Fopen.
    out = os.path.join(WORK, "results")
    args = SMALL + ["--epochs", "3", "--out", out]
    r = mpirun(args + ["--stop-after-step", "10"])
    assert r.returncode == 75, (r.returncode, r.stderr)
    (name,) = os.listdir(out)
    path = os.path.join(out, name)
    with open(path, "r+b") as f:
        f.write(b"\xde\xad\xbe\xef" * 1024)
    r = mpirun(args + ["--resume"])
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert "terminate called" not in r.stderr and "is damaged" in r.stderr, r.stderr
    assert any(f.startswith(name) and ".damaged" in f for f in os.listdir(out)), os.listdir(out)
    with h5py.File(os.path.join(out, name if name.endswith(".h5") else name[:-len(".partial")]), "r") as f:
        st = f.attrs["status"]
        assert (st.decode() if isinstance(st, bytes) else str(st)) == "completed"
        assert int(f.attrs["resumed_from_step"]) > 1


def case_damaged_checkpoint_resume():
    # A checkpoint whose state.pt has a garbled zip header: rank 0 reads it first in a
    # `gridrun-train --check-checkpoint` process of its own (so a file that crashes LibTorch's
    # reader cannot crash the job), which fails; both ranks then treat it as damaged: renamed
    # aside with one warning, and the job starts over and completes.
    out = os.path.join(WORK, "ckpt-results")
    ckpts = os.path.join(WORK, "ckpts")
    args = SMALL + ["--epochs", "3", "--out", out, "--checkpoint-dir", ckpts]
    r = mpirun(args + ["--stop-after-step", "10"])
    assert r.returncode == 75, (r.returncode, r.stderr)
    (ckpt,) = [d for d in os.listdir(ckpts) if d.startswith("ckpt-")]
    state = os.path.join(ckpts, ckpt, "state.pt")
    # (Bytes overwritten inside a tensor's data would load: the zip's CRCs are not checked.)
    with open(state, "r+b") as f:
        f.write(b"\xde\xad\xbe\xef" * 16)
    r = mpirun(args + ["--resume"])
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert "terminate called" not in r.stderr, r.stderr
    assert "--check-checkpoint exited 1" in r.stderr and "is damaged; moved to" in r.stderr, r.stderr
    assert any(d.startswith(ckpt + ".damaged") for d in os.listdir(ckpts)), os.listdir(ckpts)


CASES = {"disk_full": case_disk_full, "damaged_results_resume": case_damaged_results_resume,
         "damaged_checkpoint_resume": case_damaged_checkpoint_resume, "unreadable_data": case_unreadable_data,
         "fashion_mnist_files": case_fashion_mnist_files,
         "bad_job_file": case_bad_job_file}

if __name__ == "__main__":
    CASES[CASE]()
    # A passed case leaves nothing behind; a failed one keeps WORK for the post-mortem.
    shutil.rmtree(WORK, ignore_errors=True)
    print("ok:", CASE)
