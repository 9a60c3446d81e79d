#!/usr/bin/env python3
"""gridrun-train vs PyTorch eager on the same GPU, in the same call (bench/gpu.sh drives it).

For each model x batch x precision: gridrun-train on synthetic data (device-resident, SGD momentum
0.9, like the anchor), read back /summary from its HDF5 file (wall-clock samples/s between
synchronised points after the warm-up, MFU, mean GPU utilisation); optionally the same with
cuda_graph=true. The anchor (PyTorch eager, the same CIFAR-style ResNets) runs in the same call.
Each figure is the median of --repeats runs. Prints a markdown table with the ratios.

With --runs DIR..., gridrun's eager figures come from the job files of those run directories
(`gridrun run examples/gpu-resnets.yaml` done N times: the same configurations, launched by the
scheduler as a user launches them) instead of launching gridrun-train here; cuda_graph and the
anchor still run here.
"""
import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys

import h5py
import numpy as np


def summary_of(f):
    """/summary and the status of an open job file."""
    g = f["summary"]
    out = {k: float(g.attrs[k]) for k in g.attrs}
    for k in g:
        try:
            out[k] = float(np.asarray(g[k][()]).reshape(-1)[0])
        except (TypeError, ValueError):
            pass
    out["status"] = f.attrs["status"]
    return out


def summary(path):
    with h5py.File(path, "r") as f:
        return summary_of(f)


def run_gridrun(a, model, batch, prec, graph, work):
    out = os.path.join(work, f"{model}_{batch}_{prec}_{'graph' if graph else 'eager'}")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [a.mpirun, "--allow-run-as-root", "--bind-to", "none", "-np", "1", a.train,
           "--model", model, "--dataset", "synthetic", "--device", "gpu", "--precision", prec,
           "--batch-per-rank", str(batch), "--epochs", "1", "--max-steps", str(a.steps),
           "--train-samples", str(batch * a.steps), "--test-samples", "64", "--eval-every", "0",
           "--timing-warmup-steps", str(a.warmup), "--lr", "0.05", "--momentum", "0.9",
           "--log-every", "10", "--util-hz", "20", "--quiet", "--out", out]
    if graph:
        cmd += ["--cuda-graph", "true"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-3000:])
        return None
    files = glob.glob(os.path.join(out, "*.h5"))
    return summary(files[0]) if files else None


def attr_text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def from_runs(dirs):
    """(model, batch, precision) -> list of job summaries, from the job files of run directories."""
    out = {}
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "results", "*.h5"))):
            try:
                with h5py.File(path, "r") as f:
                    cfg = (attr_text(f.attrs["param.model"]), int(f.attrs["param.batch_per_rank"]),
                           attr_text(f.attrs["param.precision"]))
                    s = summary_of(f)
            except (OSError, KeyError, ValueError) as e:
                sys.stderr.write(f"gpu_bench: {path}: {e}\n")
                continue
            if attr_text(s["status"]) == "completed":
                out.setdefault(cfg, []).append(s)
    return out


def run_anchor(a, configs, repeats):
    """The anchor's own bench() (imported from its file, unchanged) for each config, `repeats`
    sweeps in one process: one CUDA start-up instead of one per run."""
    import importlib.util
    import contextlib
    import io
    import torch
    spec = importlib.util.spec_from_file_location("anchor", a.anchor)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.backends.cudnn.benchmark = True  # as the anchor's __main__ does
    res = {}
    for _ in range(repeats):
        for (m, b, p) in configs:
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                mod.bench(int(m[len("resnet"):]), b, p, "eager")
            hit = re.search(r"([\d.]+) samples/s", buf.getvalue())
            if hit:
                res.setdefault((m, b, p), []).append(float(hit.group(1)))
    torch.cuda.empty_cache()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", required=True, help="gridrun-train binary")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--anchor", required=True, help="pytorch_eager_anchor.py")
    ap.add_argument("--models", default="resnet18,resnet50")
    ap.add_argument("--batches", default="32,128,512")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--graph-batches", default="32,128", help="batches also run with cuda_graph")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=15)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--work", default="/tmp/gridrun-gpu-bench")
    ap.add_argument("--runs", nargs="*", default=[],
                    help="run directories whose job files give gridrun's eager figures")
    a = ap.parse_args()
    recorded = from_runs(a.runs) if a.runs else None
    os.makedirs(a.work, exist_ok=True)
    configs = [(m, int(b), p) for m in a.models.split(",") for b in a.batches.split(",")
               for p in a.precisions.split(",")]
    graph_b = {int(b) for b in a.graph_batches.split(",") if b}
    rows = []
    anchors = run_anchor(a, configs, a.repeats)
    for cfg in configs:
        m, b, p = cfg
        row = {"cfg": cfg}
        for graph in (False, True):
            if graph and b not in graph_b:
                continue
            sps, mfu, util = [], [], []
            if recorded is not None and not graph:
                results = recorded.get(cfg, [])
            else:
                results = [run_gridrun(a, m, b, p, graph, a.work) for _ in range(a.repeats)]
            for s in results:
                if not s:
                    continue
                sps.append(s.get("samples_per_s_wall", float("nan")))
                mfu.append(s.get("mfu", float("nan")))
                util.append(s.get("gpu_util_pct_mean", float("nan")))
            key = "graph" if graph else "eager"
            if sps:
                row[key] = (statistics.median(sps), statistics.median(mfu), statistics.median(util), len(sps))
        row["anchor"] = statistics.median(anchors[cfg]) if cfg in anchors else float("nan")
        rows.append(row)
        print("done", cfg, row, flush=True)

    print()
    print(f"| model | batch | precision | PyTorch eager samples/s | gridrun samples/s | gridrun/eager "
          f"| cuda_graph samples/s | graph/eager | MFU | GPU util % |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        m, b, p = r["cfg"]
        an = r["anchor"]
        g = r.get("eager")
        gg = r.get("graph")
        fmt = lambda x: f"{x:,.0f}" if x == x else "n/a"
        print(f"| {m} | {b} | {p} | {fmt(an)} | {fmt(g[0]) if g else 'failed'} | "
              f"{g[0] / an:.2f} |" if g else f"| {m} | {b} | {p} | {fmt(an)} | failed | n/a |", end="")
        if g:
            print(f" {fmt(gg[0]) if gg else '-'} | {gg[0] / an:.2f} |" if gg else " - | - |", end="")
            print(f" {g[1]:.3f} | {g[2]:.0f} |")
        else:
            print(" - | - | - | - |")
    src = (f"eager: median over the completed job files of {len(a.runs)} runs of the grid; others: "
           if a.runs else "")
    print(f"\n({src}median of {a.repeats} runs each; {a.steps} steps, first {a.warmup} left out; "
          f"anchor: {a.anchor})")


if __name__ == "__main__":
    main()
