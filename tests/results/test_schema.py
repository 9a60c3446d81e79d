#!/usr/bin/python3
"""Checks the documented HDF5 schema (docs/results.md) from Python with Debian's h5py:
job files, results.h5 with its external links (resolved from another working directory),
a live SWMR file being written, and the .partial a SIGKILLed writer leaves behind.
Usage: test_schema.py --gridrun PATH --testwriter PATH
"""
import argparse
import json
import os
import shutil
import re
import signal
import subprocess
import sys
import tempfile

import h5py
import numpy as np

STEP_COLUMNS = ["step", "epoch", "wall_s", "loss", "samples_per_s", "step_s", "data_s", "forward_s",
                "backward_s", "optimizer_s", "comm_s", "exposed_comm_s"]
EPOCH_COLUMNS = ["epoch", "train_loss", "train_acc", "test_loss", "test_acc", "epoch_s", "wall_s"]
GPU_COLUMNS = ["gpu_util_pct", "gpu_mem_bytes", "gpu_power_w", "gpu_energy_j", "gpu_temp_c", "gpu_sm_mhz"]
STATUSES = {"running", "completed", "failed", "interrupted", "target_reached"}
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

failures = []
TEMP_DIRS = []  # removed at exit


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def check_job_file(path):
    with h5py.File(path, "r", swmr=path.endswith(".partial")) as f:
        a = f.attrs
        for key in ["id", "run", "params", "status", "exit_reason", "start_time", "end_time",
                    "schema_version", "gridrun_version", "git_commit", "hostname", "cpu_model",
                    "cpu_cores", "ranks", "gpus"]:
            check(key in a, f"{path}: root attribute {key}")
        check(isinstance(a["id"], str), f"{path}: id is a str")
        check(a["status"] in STATUSES, f"{path}: status {a['status']!r}")
        check(ISO.match(a["start_time"]) is not None, f"{path}: start_time ISO 8601")
        check(int(a["schema_version"]) == 1, f"{path}: schema_version")
        params = json.loads(a["params"])
        for k, v in params.items():
            typed = a["param." + k]
            check(typed == (int(v) if isinstance(v, bool) else v), f"{path}: param.{k} == params[{k}]")
        ranks, gpus = int(a["ranks"]), int(a["gpus"])
        rows = int(f["steps/rows"][0])
        for c in STEP_COLUMNS:
            check(f["steps/" + c].ndim == 1, f"{path}: steps/{c} 1-D")
            check(f["steps/" + c].shape[0] >= rows, f"{path}: steps/{c} holds the committed rows")
        check(f["steps/rank_step_s"].shape[1:] == (ranks,), f"{path}: rank_step_s [steps x ranks]")
        check(f["steps/step"].dtype == np.int64, f"{path}: step is int64")
        erows = int(f["epochs/rows"][0])
        for c in EPOCH_COLUMNS:
            check(f["epochs/" + c].shape[0] >= erows, f"{path}: epochs/{c}")
        u = f["util"]
        for c in ["time_s", "node_cpu_pct"]:
            check(c in u, f"{path}: util/{c}")
        check(u["rank_cpu_pct"].shape[1:] == (ranks,), f"{path}: rank_cpu_pct [n x ranks]")
        check(u["rank_rss_bytes"].shape[1:] == (ranks,), f"{path}: rank_rss_bytes [n x ranks]")
        if gpus:
            for c in GPU_COLUMNS:
                check(u[c].shape[1:] == (gpus,), f"{path}: util/{c} [n x gpus]")
        else:
            check(all(c not in u for c in GPU_COLUMNS), f"{path}: no GPU columns for a cpu job")
            check(len(u.attrs["gpu_absent_reason"]) > 0, f"{path}: gpu_absent_reason")
        check("summary" in f, f"{path}: /summary")
        if a["status"] != "running":
            for name, ds in f["summary"].items():
                check(ds.shape == (1,), f"{path}: summary/{name} one row")
            check("samples_per_s" in f["summary"], f"{path}: summary/samples_per_s")
        if "profile" in f:  # docs/results.md "/profile": fixed-length names + equal-length columns
            p = f["profile"]
            check(p["name"].dtype.kind == "S", f"{path}: profile/name fixed-length strings")
            n = p["name"].shape[0]
            for c in ["calls", "self_cpu_us", "total_cpu_us", "self_device_us", "total_device_us"]:
                check(p[c].shape == (n,), f"{path}: profile/{c} [{n}]")
            check(n == 0 or p["name"][0].decode().startswith("aten::"), f"{path}: profile/name readable")
        if a.get("gpus", 0) and a["status"] != "running":
            check("profile" in f, f"{path}: synthetic GPU jobs carry /profile")
        return a["id"], rows


def steps_frame(path):
    """The docs/results.md snippet: /steps -> a dict of equal-length columns (DataFrame-ready)."""
    with h5py.File(path, "r", swmr=True) as f:
        g = f["steps"]
        n = int(g["rows"][0])
        cols = {k: g[k][:n] for k in g if k != "rows" and g[k].ndim == 1}
        per_rank = g["rank_step_s"][:n]
        for r in range(per_rank.shape[1]):
            cols[f"rank{r}_step_s"] = per_rank[:, r]
    try:
        import pandas as pd  # optional on this machine
        return pd.DataFrame(cols)
    except ImportError:
        return cols


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gridrun", required=True)
    ap.add_argument("--testwriter", required=True)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="gridrun-schema-")
    TEMP_DIRS.append(tmp)
    run = os.path.join(tmp, "synthetic")
    subprocess.run([args.testwriter, "run", run], check=True)

    # Job files.
    ids = {}
    for name in sorted(os.listdir(os.path.join(run, "results"))):
        # Hidden names are gridrun's caches (.gridrun-index, .gridrun-journal), not job files.
        if name.startswith("corrupt") or name.startswith("."):
            continue
        jid, rows = check_job_file(os.path.join(run, "results", name))
        ids[jid] = rows
    check(len(ids) == 10, f"10 readable job files, got {len(ids)}")

    # results.h5 through gridrun collect; the corrupt file is named and skipped.
    p = subprocess.run([args.gridrun, "collect", run], capture_output=True, text=True)
    check(p.returncode == 0, f"collect rc {p.returncode}: {p.stderr}")
    check("corrupt000000.h5" in p.stderr, "collect names the corrupt file")
    index = os.path.join(run, "results.h5")
    os.chdir("/")  # external links must resolve relative to results.h5, not the cwd
    with h5py.File(index, "r") as f:
        jobs = f["jobs"]
        n = jobs["id"].shape[0]
        check(n == 10, f"/jobs has 10 rows, got {n}")
        for name in ["status", "exit_reason", "file"]:
            check(jobs[name].shape == (n,), f"/jobs/{name} length")
        for name, ds in list(jobs["params"].items()) + list(jobs["summary"].items()):
            check(ds.shape == (n,), f"/jobs/.../{name} length")
        check(jobs["params/ranks"].dtype == np.int64, "ranks column is int64")
        check(jobs["params/overlap"].attrs["type"] == "bool", "bool columns are marked")
        table = {k: jobs[k].asstr()[:] for k in ["id", "status", "file"]}
        table.update({k: v[:] for k, v in jobs["summary"].items()})
        for i, jid in enumerate(table["id"]):
            link = f.get("links/" + jid, getlink=True)
            check(isinstance(link, h5py.ExternalLink), f"/links/{jid} is an external link")
            check(f["links/" + jid].attrs["id"] == jid, f"/links/{jid} resolves to its job file")
            check(int(f["links/" + jid + "/steps/rows"][0]) == ids[jid], f"/links/{jid}/steps readable")
        i = list(table["id"]).index("cpu-r1-s0")
        with h5py.File(os.path.join(run, "results", "cpu-r1-s0.h5"), "r") as jf:
            check(table["samples_per_s"][i] == jf["summary/samples_per_s"][0], "index summary == job summary")
            check(table["status"][i] == "completed", "index status")

    # A live SWMR file, then the .partial left by SIGKILL.
    live_run = os.path.join(tmp, "live")
    os.makedirs(os.path.join(live_run, "results"))
    path = os.path.join(live_run, "results", "live1.h5.partial")
    w = subprocess.Popen([args.testwriter, "live", os.path.join(live_run, "results"), "live1", "25"],
                         stdout=subprocess.PIPE, text=True)
    try:
        check(w.stdout.readline().strip() == "flushed 25 rows", "writer flushed 25 rows")
        f = h5py.File(path, "r", swmr=True)
        rows = f["steps/rows"]
        check(int(rows[0]) == 25, "live read sees 25 committed rows")
        w.send_signal(signal.SIGUSR1)
        check(w.stdout.readline().strip() == "flushed 53 rows", "writer flushed 53 rows")
        rows.refresh()
        f["steps/step"].refresh()
        check(int(rows[0]) == 53, f"refresh() sees 53 rows, got {int(rows[0])}")
        check(list(f["steps/step"][:53]) == list(range(53)), "live step column")
        f.close()
        w.send_signal(signal.SIGKILL)
        w.wait()
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
    check(w.returncode == -signal.SIGKILL, "writer died of SIGKILL")
    frame = steps_frame(path)
    check(len(frame["step"]) == 53, "killed writer's .partial: 53 rows via h5py")
    check(float(frame["rank1_step_s"][0]) == 0.01, "per-rank column in the frame")
    p = subprocess.run([args.gridrun, "report", live_run, "--format", "csv"], capture_output=True, text=True)
    check(p.returncode == 0, f"report on the killed run: rc {p.returncode} {p.stderr}")
    check("live1,running" in p.stdout, "report lists the killed job as running")

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("schema checks passed")
    return 0


if __name__ == "__main__":
    try:
        code = main()
    finally:
        os.chdir("/")
        for d in TEMP_DIRS:
            shutil.rmtree(d, ignore_errors=True)
    sys.exit(code)
