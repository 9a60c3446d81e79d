#!/usr/bin/python3
"""Runner benchmarks (issue 3). Every figure is the median of --reps runs; each comparison's
reference is measured in the same invocation, interleaved run by run with the measured side.

  /usr/bin/python3 bench/runner/bench_runner.py --build build-runner [--reps 5] [--quick]

1. overhead   gridrun-train (1 rank) vs bench_runner_bare_loop: steady-state samples/s
2. ddp        gridrun-train (2 ranks) vs PyTorch DDP gloo (ddp_reference.py): samples/s
3. allreduce  GradSync per step vs one raw MPI_Allreduce of the same bytes (bench_runner_allreduce)
4. overlap    exposed communication per step with overlap on vs off (gridrun-train, 2 ranks)
"""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MPI = ["mpirun", "--allow-run-as-root", "--bind-to", "none"]


def sh(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p.stdout


def train(a, np_, model, batch, steps, warmup, extra=()):
    out = os.path.join(a.work, "out")
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(os.path.join(a.work, "checkpoints"), ignore_errors=True)
    sh(MPI + ["-np", str(np_), os.path.join(a.build, "bin", "gridrun-train"), "--out", out,
              "--quiet", "--model", model, "--ranks", str(np_), "--batch-per-rank", str(batch),
              "--threads-per-rank", "1", "--epochs", "0", "--max-steps", str(warmup + steps),
              "--eval-every", "0", "--timing-warmup-steps", str(warmup), *extra])
    f = h5py.File(glob.glob(out + "/*.h5")[0], "r")
    n = int(np.asarray(f["steps/rows"][()]).reshape(-1)[0])
    wall = f["steps/wall_s"][:n]
    exposed = f["steps/exposed_comm_s"][:n]
    comm = f["steps/comm_s"][:n]
    sps = steps * batch * np_ / (wall[-1] - wall[warmup - 1])
    return sps, float(np.median(exposed[warmup:])), float(np.median(comm[warmup:]))


def med(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--work", default="/tmp/gridrun-bench-runner")
    ap.add_argument("--only", default="overhead,ddp,allreduce,overlap")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    only = a.only.split(",")
    rows = []
    def versus(kind, ranks, label, reference, name, fmt):
        """gridrun against a reference loop, run alternately in the same call (same load)."""
        for model, batch, steps in (("mlp", 64, 200), ("lenet", 64, 200)):
            g, r = [], []
            for i in range(a.reps):
                r.append(reference(model, batch, steps, i))
                g.append(train(a, ranks, model, batch, steps, 20)[0])
            rows.append((kind, label.format(model=model, batch=batch),
                         f"gridrun {med(g):.0f} vs {name} {med(r):.0f} samples/s", fmt(med(g) / med(r))))
            print(rows[-1], g, r, flush=True)

    if "overhead" in only:
        versus("overhead", 1, "{model} b{batch} 1 rank 1 thread",
               lambda m, b, s, i: float(sh([os.path.join(a.build, "bin", "bench_runner_bare_loop"), m,
                                            str(b), str(s), "20", "1"])),
               "bare loop", lambda q: f"{q:.3f} (slowdown {100 * (1 - q):.1f} %)")
    if "ddp" in only:
        versus("ddp", 2, "{model} b{batch}/rank 2 ranks 1 thread",
               lambda m, b, s, i: float(sh(MPI + ["-np", "2", "/usr/bin/python3",
                                                  os.path.join(HERE, "ddp_reference.py"), m, str(b),
                                                  str(s), "20", "1", str(29500 + i)])),
               "DDP gloo", lambda q: f"{q:.2f}x")
    if "allreduce" in only:
        for model, reps in (("mlp", 50), ("resnet18", 20)):
            ratios, lines = [], []
            for _ in range(a.reps):
                line = sh(MPI + ["-np", "2", os.path.join(a.build, "bin", "bench_runner_allreduce"),
                                 model, "25", str(reps)]).strip()
                kv = dict(x.split("=") for x in line.split()[1:])
                ratios.append(float(kv["ratio"]))
                lines.append(kv)
            m = sorted(lines, key=lambda kv: float(kv["ratio"]))[len(lines) // 2]
            rows.append(("allreduce", f"{model} grads {int(m['bytes']) / 1e6:.1f} MB, "
                         f"{m['buckets']} bucket(s), 2 ranks",
                         f"GradSync {m['gradsync_ms']} ms vs raw MPI_Allreduce {m['raw_ms']} ms",
                         f"{med(ratios):.3f}"))
            print(rows[-1], ratios, flush=True)
    if "overlap" in only:
        for model, batch, bucket in (("mlp", 64, "1"), ("lenet", 64, "0.05")):
            on, off, c_on, c_off = [], [], [], []
            for _ in range(a.reps):
                r = train(a, 2, model, batch, 100, 10, ["--bucket-mb", bucket, "--overlap", "true"])
                on.append(r[1]), c_on.append(r[2])
                r = train(a, 2, model, batch, 100, 10, ["--bucket-mb", bucket, "--overlap", "false"])
                off.append(r[1]), c_off.append(r[2])
            rows.append(("overlap", f"{model} b{batch}/rank bucket {bucket} MB, 2 ranks",
                         f"exposed {1e3 * med(on):.3f} ms (overlap) vs {1e3 * med(off):.3f} ms "
                         f"(none); comm {1e3 * med(c_on):.3f} / {1e3 * med(c_off):.3f} ms",
                         f"{med(on) / med(off):.2f}"))
            print(rows[-1], flush=True)
    print("\n| benchmark | case | figures (median of %d) | ratio |" % a.reps)
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
