#!/usr/bin/env python3
"""Which LibTorch should a CPU user build gridrun against? One table, measured in one run (issue 22).

For lenet, mlp and resnet18 on Fashion-MNIST (1x28x28, 10 classes), 1 and 2 CPU ranks, one thread
per rank, the steady-state global samples/s of
  - gridrun-train built on Debian's LibTorch 1.13   (--debian, default build/)
  - gridrun-train built on the wheel's LibTorch 2.15 (--wheel,  default build-cuda/; CUDA-linked,
    running on the CPU)
  - PyTorch 2.15 itself (torch_reference.py under the wheel's Python): an eager loop for 1 rank,
    DDP over gloo for 2 ranks
Runs are interleaved (one of each side per repetition, so all sides see the same machine load);
each figure is the median of --reps. Ratios are against PyTorch 2.15 measured in the same run.

  .venv-wheel/bin/python3 bench/runner/bench_libtorch.py [--reps 5] [--models lenet,mlp,resnet18]
"""
import argparse
import os
import statistics
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import bench_runner  # noqa: E402  (its gridrun-train driver: same flags, same /steps reading)

# model: (batch per rank, timed steps, warm-up steps). resnet18 is ~1 s a step on one core.
CASES = {"mlp": (64, 200, 20), "lenet": (64, 200, 20), "resnet18": (32, 12, 3)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--debian", default=os.path.join(ROOT, "build"), help="build on Debian's LibTorch")
    ap.add_argument("--wheel", default=os.path.join(ROOT, "build-cuda"), help="build on the wheel's")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--models", default="lenet,mlp,resnet18")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--work", default="/tmp/gridrun-bench-libtorch")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    import torch
    rows = []
    for model in a.models.split(","):
        batch, steps, warm = CASES[model]
        for ranks in map(int, a.ranks.split(",")):
            got = {"debian": [], "wheel": [], "torch": []}
            for i in range(a.reps):
                for side in ("debian", "wheel"):
                    ns = types.SimpleNamespace(build=getattr(a, side), work=a.work)
                    got[side].append(bench_runner.train(ns, ranks, model, batch, steps, warm,
                                                        ["--dataset", "fashion-mnist"])[0])
                got["torch"].append(float(bench_runner.sh(
                    bench_runner.MPI + ["-np", str(ranks), sys.executable,
                                        os.path.join(HERE, "torch_reference.py"), model, str(batch),
                                        str(steps), str(warm), str(29600 + i)])))
            med = {k: statistics.median(v) for k, v in got.items()}
            rows.append((model, ranks, batch, med))
            print(model, ranks, {k: [round(x) for x in v] for k, v in got.items()}, flush=True)
    ref = "PyTorch %s" % torch.__version__.split("+")[0]
    print(f"\n| model | ranks | batch/rank | gridrun on LibTorch 1.13 | gridrun on LibTorch 2.15 | "
          f"{ref} (eager / DDP gloo) | 1.13 / ref | 2.15 / ref |")
    print("|---|---|---|---|---|---|---|---|")
    for model, ranks, batch, m in rows:
        print(f"| {model} | {ranks} | {batch} | {m['debian']:.0f} | {m['wheel']:.0f} | {m['torch']:.0f} | "
              f"{m['debian'] / m['torch']:.2f} | {m['wheel'] / m['torch']:.2f} |")
    print(f"(samples/s, median of {a.reps}, one thread per rank)")


if __name__ == "__main__":
    main()
