#!/usr/bin/env python3
"""Warm against cold launches (BENCHMARKS.md, "Warm launches"; docs/scheduler.md).

A grid of N tiny CPU jobs (mlp on synthetic data, one epoch of 8 steps, one seed each) is run with
`gridrun run --launch cold` and with `--launch warm`, alternately, R times each. Per run: the
makespan (gridrun run's wall time) and the mean launch + load + set-up of a job (/summary
time_launch_s + time_load_s + time_setup_s, read back with h5py), for the jobs that ran warm and
those that ran cold. With --calibrate, also `gridrun calibrate` of the same grid, cold and warm.
With --slurm, the grid goes through `gridrun submit --slurm` instead, to the 3-host test cluster
(tests/slurm/local-cluster.sh start --nodes 3, started here in the work folder and stopped at the
end): cold is one job per array task, warm is --launch warm --jobs-per-task K (default 8); the
makespan runs from the submit to the moment no job of the run is left in squeue.
The summary gives medians over the R runs and the cold/warm ratios of the same sitting.
A benchmark, not a test: nothing here asserts; the table is the result.

  python3 bench/scheduler/bench_warm.py [--build DIR] [--jobs N] [--repeats R] [--ranks K]
                                        [--calibrate] [--slurm [--jobs-per-task K]] [--keep]
"""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))


def grid(work, jobs, ranks):
    path = os.path.join(work, "tiny.yaml")
    with open(path, "w") as f:
        f.write("name: tiny\ndefaults:\n"
                "  {model: mlp, dataset: synthetic, device: cpu, threads_per_rank: 1, ranks: %d,\n"
                "   train_samples: 256, test_samples: 64, batch_per_rank: 32, epochs: 1, lr: 0.05}\n"
                "grid:\n  model: [mlp]\nseeds: [%s]\n" % (ranks, ", ".join(str(s) for s in range(1, jobs + 1))))
    return path


def timed(cmd, log):
    t0 = time.monotonic()
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        sys.exit("bench_warm.py: %s failed (see %s)" % (" ".join(cmd[:2]), log))
    return time.monotonic() - t0


def drained(run_dir):
    """No job of the run (slurm/submitted.tsv) is listed by squeue any more."""
    with open(os.path.join(run_dir, "slurm", "submitted.tsv")) as f:
        ids = [l.split("\t")[3].strip() for l in f if l.strip() and not l.startswith("#")]
    r = subprocess.run(["squeue", "-h", "-j", ",".join(ids), "-o", "%i"], capture_output=True, text=True)
    return r.returncode == 0 and not r.stdout.strip()


def submitted(cmd, run_dir, log):
    """The makespan of a submission: from sbatch to the last of its jobs leaving squeue."""
    t0 = time.monotonic()
    timed(cmd, log)
    while not drained(run_dir):
        time.sleep(0.2)
    return time.monotonic() - t0


class Cluster:
    """The 3-host test cluster in `work`, for the length of the benchmark."""

    def __init__(self, work):
        self.script = os.path.join(HERE, "..", "..", "tests", "slurm", "local-cluster.sh")
        self.dir = os.path.join(work, "cluster")
        if subprocess.run(["bash", self.script, "start", "--nodes", "3", self.dir],
                          stdout=subprocess.DEVNULL).returncode != 0:
            self.stop()  # a start that failed half-way leaves namespaces and daemons
            sys.exit("bench_warm.py: the 3-host cluster did not start")
        os.environ["SLURM_CONF"] = os.path.join(self.dir, "slurm.conf")

    def stop(self):
        subprocess.run(["bash", self.script, "stop", self.dir], stdout=subprocess.DEVNULL)


def launches(results):
    """Mean launch + load + set-up of the warm jobs and of the cold ones, and how many ran warm."""
    warm, cold = [], []
    for name in glob.glob(os.path.join(results, "*.h5")):
        with h5py.File(name, "r") as h:
            s = {k: float(h["summary"][k][0]) for k in ("launch_warm", "time_launch_s", "time_load_s", "time_setup_s")}
        (warm if s["launch_warm"] == 1 else cold).append(s["time_launch_s"] + s["time_load_s"] + s["time_setup_s"])
    mean = lambda v: sum(v) / len(v) if v else float("nan")
    return mean(warm), mean(cold), len(warm)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"), help="build folder (bin/gridrun)")
    ap.add_argument("--jobs", type=int, default=200, help="tiny jobs in the grid")
    ap.add_argument("--repeats", type=int, default=5, help="runs each way")
    ap.add_argument("--ranks", type=int, default=1, help="ranks per job")
    ap.add_argument("--calibrate", action="store_true", help="also time `gridrun calibrate` cold and warm")
    ap.add_argument("--slurm", action="store_true", help="submit to the 3-host test cluster instead of gridrun run")
    ap.add_argument("--jobs-per-task", type=int, default=8, help="with --slurm: warm jobs per array task")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    a = ap.parse_args()
    gridrun, train = os.path.join(a.build, "bin", "gridrun"), os.path.join(a.build, "bin", "gridrun-train")
    if not (os.access(gridrun, os.X_OK) and os.access(train, os.X_OK)):
        sys.exit("bench_warm.py: build first (%s)" % gridrun)
    work = tempfile.mkdtemp(prefix="gridrun-bench-warm-")
    os.chmod(work, 0o755)  # the cluster's munged runs as its own user
    g = grid(work, a.jobs, a.ranks)
    print("bench_warm.py: %d jobs of %d rank(s), %d runs each way, on %d cores" % (a.jobs, a.ranks, a.repeats, os.cpu_count()),
          file=sys.stderr)
    cluster = Cluster(work) if a.slurm else None
    try:
        rows, cal = sweep(a, work, g, gridrun, train, cluster)
    finally:
        if cluster:
            cluster.stop()
    summarize(a, rows, cal)
    if a.keep:
        print("bench_warm.py: work folder kept: " + work, file=sys.stderr)
    else:
        shutil.rmtree(work)


def sweep(a, work, g, gridrun, train, cluster):
    """R runs each way, alternately: {mode: [(makespan, jobs warm, warm launch, cold launch)]}."""
    rows = {"cold": [], "warm": []}
    cal = {"cold": [], "warm": []}
    for k in range(a.repeats):
        for mode in ("cold", "warm"):
            out = os.path.join(work, "%s-%d" % (mode, k))
            if a.calibrate:
                cal[mode].append(timed([gridrun, "calibrate", g, "--out", out, "--train-bin", train, "--launch", mode, "--accept-load"],
                                       out + ".calibrate.log"))
            if cluster:
                per_task = str(a.jobs_per_task if mode == "warm" else 1)
                make = submitted([gridrun, "submit", g, "--slurm", "--out", out, "--train-bin", train, "--time", "30",
                                  "--launch", mode, "--jobs-per-task", per_task], os.path.join(out, "tiny"), out + ".log")
            else:
                make = timed([gridrun, "run", g, "--out", out, "--train-bin", train, "--no-report", "--launch", mode],
                             out + ".log")
            warm_s, cold_s, n_warm = launches(os.path.join(out, "tiny", "results"))
            rows[mode].append((make, n_warm, warm_s, cold_s))
            print("%s %d: makespan %.2f s, %d warm, launch+load+set-up warm %.4f s cold %.4f s%s" % (
                mode, k + 1, make, n_warm, warm_s, cold_s,
                ", calibrate %.2f s" % cal[mode][-1] if a.calibrate else ""), file=sys.stderr)
            shutil.rmtree(out)
    return rows, cal


def summarize(a, rows, cal):
    med = lambda mode, i: statistics.median(r[i] for r in rows[mode])
    print("| launch | runs | makespan s (median) | per job s | jobs warm | launch+load+set-up per warm job s | per cold job s |")
    print("|---|---|---|---|---|---|---|")
    for mode in ("cold", "warm"):
        warm_vals = [r[2] for r in rows[mode] if r[2] == r[2]]
        print("| %s | %d | %.2f | %.3f | %.0f | %s | %.3f |" % (
            mode, len(rows[mode]), med(mode, 0), med(mode, 0) / a.jobs, med(mode, 1),
            "%.4f" % statistics.median(warm_vals) if warm_vals else "-", med(mode, 3)))
    print("\ncold/warm makespan: %.2fx" % (med("cold", 0) / med("warm", 0)))
    if a.calibrate:
        c, w = statistics.median(cal["cold"]), statistics.median(cal["warm"])
        print("calibrate: cold %.2f s, warm %.2f s (median of %d), cold/warm %.2fx" % (c, w, a.repeats, c / w))


if __name__ == "__main__":
    main()
