"""Part of a grid with the real binaries: `--only KEY=VALUE[,VALUE]` and `--set KEY=VALUE`.

Usage: e2e_part.py GRIDRUN GRIDRUN_TRAIN CASE
Cases: only_mixed (a cpu+gpu grid on a machine without GPUs: refused whole with the command that
runs the rest; that command runs the CPU jobs only and they complete; status still lists every
job), set_epochs (--set epochs=1 makes new ids, and the jobs train 1 epoch), bad_flags (bad
selectors and overrides exit 2 naming the flag on run, plan, simulate and submit; plan and
simulate accept both flags). `--gpus 0` stands for a machine without a GPU, so the cases do not
depend on the test machine.
"""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

GRIDRUN, TRAIN, CASE = sys.argv[1:4]
WORK = tempfile.mkdtemp(prefix="gridrun-e2e-part-")
OUT = os.path.join(WORK, "runs")

MIXED = """name: mixed
defaults:
  model: mlp
  dataset: synthetic
  threads_per_rank: 1
  train_samples: 256
  test_samples: 64
  batch_per_rank: 32
  epochs: 2
grid:
  device: [cpu, gpu]
  lr: [0.05, 0.1]
"""


def grid():
    path = os.path.join(WORK, "mixed.yaml")
    with open(path, "w") as f:
        f.write(MIXED)
    return path


def gridrun(cmd, *args):
    extra = ["--out", OUT] if cmd in ("run", "simulate", "submit") else []
    extra += ["--train-bin", TRAIN] if cmd == "run" else []
    return subprocess.run([GRIDRUN, cmd] + list(args) + extra, text=True, capture_output=True)


def plan_rows(g, *args):
    r = gridrun("plan", g, "--format", "csv", *args)
    assert r.returncode == 0, r.stderr
    return list(csv.DictReader(io.StringIO(r.stdout)))


def results_attr(run, job_id, name):
    with h5py.File(os.path.join(OUT, run, "results", job_id + ".h5"), "r") as f:
        a = f.attrs[name]
        return a.decode() if isinstance(a, bytes) else a.item() if hasattr(a, "item") else a


def state():
    with open(os.path.join(OUT, "mixed", "state.json")) as f:
        return json.load(f)


def case_only_mixed():
    g = grid()
    rows = plan_rows(g)
    cpu = sorted(r["id"] for r in rows if r["device"] == "cpu")
    gpu = sorted(r["id"] for r in rows if r["device"] == "gpu")
    assert len(cpu) == 2 and len(gpu) == 2, rows
    # Refused whole: nothing runs, the message says which jobs need what and names the command.
    r = gridrun("run", g, "--gpus", "0")
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "2 jobs need device=gpu (1 GPU each)" in r.stderr, r.stderr
    command = "gridrun run %s --only device=cpu" % g
    assert command in r.stderr and "runs the other 2 jobs" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(OUT, "mixed")), "a refused run writes nothing"
    # The command it names (on the same machine) runs the CPU jobs only, which complete; the
    # selected jobs keep their ids.
    r = gridrun("run", *(command.split()[2:] + ["--gpus", "0", "--no-report"]))
    assert r.returncode == 0, (r.stdout, r.stderr)
    for i in cpu:
        assert results_attr("mixed", i, "status") == "completed", i
        assert results_attr("mixed", i, "param.device") == "cpu", i
    for i in gpu:
        assert not os.path.exists(os.path.join(OUT, "mixed", "results", i + ".h5")), "GPU job ran: " + i
    # The run directory still records every job of the grid; status lists them all.
    assert sorted(state()["jobs"]) == sorted(cpu + gpu), state()["jobs"].keys()
    s = subprocess.run([GRIDRUN, "status", os.path.join(OUT, "mixed"), "--format", "csv"], text=True,
                       capture_output=True)
    assert s.returncode == 0, s.stderr
    st = {row["id"]: row["state"] for row in csv.DictReader(io.StringIO(s.stdout))}
    assert sorted(st) == sorted(cpu + gpu), st
    assert all(st[i] == "completed" for i in cpu) and all(st[i] != "completed" for i in gpu), st
    # A value list is any of the values, compared as typed values (0.10 is 0.1); ids select too.
    assert [r["id"] for r in plan_rows(g, "--only", "lr=0.10,0.3", "--only", "device=cpu")] == \
        [r["id"] for r in rows if r["device"] == "cpu" and r["lr"] == "0.1"]
    assert [r["id"] for r in plan_rows(g, "--only", "id=" + gpu[0])] == [gpu[0]]


def case_set_epochs():
    g = grid()
    before = {r["id"] for r in plan_rows(g, "--only", "device=cpu")}
    rows = plan_rows(g, "--only", "device=cpu", "--set", "epochs=1")
    assert len(rows) == 2 and all(r["epochs"] == "1" for r in rows), rows
    after = {r["id"] for r in rows}
    assert not (before & after), "an overridden value is part of the id: %s %s" % (before, after)
    r = gridrun("run", g, "--only", "device=cpu", "--set", "epochs=1")
    assert r.returncode == 0, (r.stdout, r.stderr)
    for i in after:
        assert results_attr("mixed", i, "status") == "completed", i
        assert results_attr("mixed", i, "param.epochs") == 1, i
        with h5py.File(os.path.join(OUT, "mixed", "results", i + ".h5"), "r") as f:
            assert list(f["epochs/epoch"][:]) == [1], (i, f["epochs/epoch"][:])
    assert state()["overrides"] == ["epochs=1"], state()
    # The report of the run (printed by run) shows the overridden jobs as the run's current grid.
    rep = subprocess.run([GRIDRUN, "report", os.path.join(OUT, "mixed"), "--format", "csv"], text=True,
                         capture_output=True)
    assert rep.returncode == 0, rep.stderr
    for i in after:
        assert i in rep.stdout, (i, rep.stdout)
    # status shows every job as the run resolved it: the unselected (gpu) jobs with epochs=1 too.
    st = subprocess.run([GRIDRUN, "status", os.path.join(OUT, "mixed"), "--format", "json"], text=True,
                        capture_output=True)
    assert st.returncode == 0, st.stderr
    jobs = json.loads(st.stdout)["jobs"]
    assert len(jobs) == 4 and all(j["params"].get("epochs", 1) == 1 for j in jobs), jobs
    assert {j["state"] for j in jobs} == {"completed", "pending"}, jobs
    # Issue 58: run again without --set. The first selection's jobs keep their own parameters: the
    # two that ran are shown as of an earlier grid (epochs 1, from their job files), the two that
    # never started (gpu, epochs=1) are neither shown nor counted as pending; ls agrees.
    r = gridrun("run", g, "--only", "device=cpu", "--no-report")
    assert r.returncode == 0, (r.stdout, r.stderr)
    st = subprocess.run([GRIDRUN, "status", os.path.join(OUT, "mixed"), "--format", "json"], text=True,
                        capture_output=True)
    assert st.returncode == 0, st.stderr
    doc = json.loads(st.stdout)
    by_id = {j["id"]: j for j in doc["jobs"]}
    assert len(by_id) == 6 and doc["earlier_hidden"] == 2, doc
    for i in after:
        assert by_id[i]["earlier"] and by_id[i]["state"] == "completed", by_id[i]
        assert by_id[i]["params"]["epochs"] == "1" and by_id[i]["params"]["device"] == "cpu", by_id[i]
    now = [j for j in doc["jobs"] if not j["earlier"]]
    assert len(now) == 4 and all(j["params"]["epochs"] != "1" for j in now), now
    assert doc["counts"] == {"completed": 4, "pending": 2}, doc["counts"]
    assert any("never started and will not run: not shown or counted" in n for n in doc["notes"]), doc["notes"]
    table = subprocess.run([GRIDRUN, "status", os.path.join(OUT, "mixed")], text=True, capture_output=True)
    assert table.stdout.count("completed (earlier)") == 2, table.stdout
    ls = subprocess.run([GRIDRUN, "ls", OUT, "--format", "json"], text=True, capture_output=True)
    row = json.loads(ls.stdout)[0]
    assert (row["jobs"], row["done"], row["pending"]) == (6, 4, 2), row


def case_bad_flags():
    g = grid()
    bad = (
        (["--only", "devic=cpu"], "--only devic=cpu: unknown key 'devic'; did you mean 'device'?"),
        (["--only", "lr=abc"], "--only lr=abc: lr: expected a number, got 'abc'"),
        (["--only", "device"], "--only device: expected KEY=VALUE"),
        (["--only", "device=tpu"], "--only device=tpu: selects none of the grid's 4 jobs"),
        (["--set", "epochs=x"], "--set epochs=x: epochs: expected an integer, got 'x'"),
        (["--set", "epoch=1"], "--set epoch=1: unknown key 'epoch'; did you mean 'epochs'?"),
        (["--set", "epochs=-1"], "--set epochs=-1: epochs: -1 is out of range (must be >= 0)"),
        # A combination the grid's checks refuse is reported at the override.
        (["--set", "epochs=0"], "--set epochs: epochs and max_steps are both 0"),
    )
    for cmd in ("plan", "run", "simulate", "submit"):
        for args, needle in bad:
            r = gridrun(cmd, g, *args)
            assert r.returncode == 2 and needle in r.stderr, (cmd, args, r.returncode, r.stderr)
    assert not os.path.exists(os.path.join(OUT, "mixed")), "bad input writes nothing"
    # plan and simulate take both flags (simulate plans the GPU jobs on a cluster file).
    r = gridrun("plan", g, "--only", "device=cpu", "--set", "epochs=1")
    assert r.returncode == 0 and "2 jobs (selected by --only from 4)" in r.stdout, (r.stdout, r.stderr)
    r = gridrun("simulate", g, "--only", "device=cpu", "--set", "epochs=1", "--gpus", "0", "--format", "json")
    assert r.returncode == 0, r.stderr
    sim = json.loads(r.stdout)
    assert {j["id"] for j in sim["jobs"]} == {x["id"] for x in plan_rows(g, "--only", "device=cpu", "--set", "epochs=1")}
    # The mixed grid simulated without a GPU names the simulate command that plans the rest.
    r = gridrun("simulate", g, "--gpus", "0", "--set", "epochs=1")
    assert r.returncode == 2 and "gridrun simulate %s --set epochs=1 --only device=cpu" % g in r.stderr, r.stderr


CASES = {"only_mixed": case_only_mixed, "set_epochs": case_set_epochs, "bad_flags": case_bad_flags}

if __name__ == "__main__":
    CASES[CASE]()
    shutil.rmtree(WORK, ignore_errors=True)
    print("ok:", CASE)
