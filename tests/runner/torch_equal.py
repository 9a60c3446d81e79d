#!/usr/bin/env python3
"""gridrun's data-parallel training math equals PyTorch's, step by step.

gridrun-train (real mpirun, RANKS ranks) trains mlp on Fashion-MNIST from its own initial weights,
exported with --init-out; Debian's python3-torch then loads those weights (h5py), replays the same
global batches in the same order (gridrun's portable sampler, re-implemented below) with
torch.optim.SGD (momentum + weight decay) at the same global batch in one process, and the
per-step training loss of the first STEPS steps must agree to 1e-5 relative (docs/runner.md), or,
where float32 rounding itself has grown larger than that, to within 4x the reference's own float32
rounding drift at that step (see agree() below).

    torch_equal.py GRIDRUN_TRAIN RANKS [--steps N] [--epochs E]
    (--epochs: also train E full epochs and print both final test accuracies; bench/torch_equal.sh)

--torchscript (issue 33): the same check for a user's own model and data. This python's torch
scripts a small CNN (own_files.SmallCNN: 1x28x28, 10 classes; with BatchNorm at 1 rank, without
at more ranks, where per-rank batch statistics cannot equal one process's, unless --bn says
otherwise) and saves it with torch.jit.save; the first Fashion-MNIST samples are copied into an
HDF5 data set (uint8 /train/x [N,1,28,28], /test/x, int64 labels, attrs mean, std, classes);
gridrun-train trains `model: torchscript` on `dataset: hdf5` with --init-out; the init weights
(dotted state_dict names) must equal the archive's and are loaded into the same jit module with
load_state_dict, which then replays the same batches with torch.optim.SGD. Same tolerance.

    torch_equal.py GRIDRUN_TRAIN RANKS --torchscript [--steps N] [--bn auto|on|off] [--keep DIR]
"""
import argparse
import gzip
import os
import subprocess
import sys
import tempfile

import h5py
import torch

ap = argparse.ArgumentParser()
ap.add_argument("train")
ap.add_argument("ranks", type=int)
ap.add_argument("--steps", type=int, default=50)
ap.add_argument("--epochs", type=int, default=0)
ap.add_argument("--torchscript", action="store_true",
                help="a scripted CNN (model: torchscript) on an HDF5 copy of Fashion-MNIST")
ap.add_argument("--bn", choices=("auto", "on", "off"), default="auto",
                help="--torchscript: BatchNorm in the CNN (auto: at 1 rank only)")
ap.add_argument("--keep", help="--torchscript: keep the model, data and results in this folder")
args = ap.parse_args()
if args.torchscript and args.epochs:
    ap.error("--epochs is not supported with --torchscript")

DATA = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530          # runner/include/gridrun/runner/dataset.hpp
GLOBAL_BATCH, LR, MOMENTUM, WD, SEED = 64, 0.05, 0.9, 5e-4, 0
RTOL = 1e-5
DRIFT_FACTOR = 4.0
full = args.epochs > 0
train_n = 60000 if full else GLOBAL_BATCH * args.steps
test_n = 10000 if full else 64
torch.set_num_threads(1)


def idx(name, n, images):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        raw = f.read()
    if images:
        return torch.frombuffer(bytearray(raw[16:16 + n * 784]), dtype=torch.uint8).view(n, 1, 28, 28)
    return torch.frombuffer(bytearray(raw[8:8 + n]), dtype=torch.uint8).to(torch.int64)


def batch(x_u8, y, index):
    # As datasets.cpp: gather uint8, to float, / 255, then (x - mean) / std, all in float32.
    i = torch.tensor(index, dtype=torch.int64)
    x = x_u8.index_select(0, i).to(torch.float32).div_(255.0)
    x.sub_(torch.tensor([MEAN], dtype=torch.float32).view(1, 1, 1, 1))
    x.div_(torch.tensor([STD], dtype=torch.float32).view(1, 1, 1, 1))
    return x, y.index_select(0, i)


M64 = (1 << 64) - 1


def permutation(n, seed, epoch):
    # runner/src/epoch_sampler.cpp: Fisher-Yates driven by splitmix64.
    p = list(range(n))
    s = ((seed * 0x100000001B3) & M64) ^ ((epoch + 0x5bd1e995) & M64)
    for i in range(n - 1, 0, -1):
        s = (s + 0x9E3779B97F4A7C15) & M64
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        z ^= z >> 31
        j = z % (i + 1)
        p[i], p[j] = p[j], p[i]
    return p


def sgd_replay(model, dtype, x_u8, y, n, epochs, max_steps):
    """The reference: torch.optim.SGD over gridrun's global batches of the first n samples (its
    sampler, epoch by epoch) in `dtype`; the per-step training losses (max_steps 0: all)."""
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WD)
    losses = []
    for epoch in range(epochs):
        perm = permutation(n, SEED, epoch)
        for s in range(n // GLOBAL_BATCH):
            if max_steps and len(losses) == max_steps:
                return losses
            xb, yb = batch(x_u8, y, perm[s * GLOBAL_BATCH:(s + 1) * GLOBAL_BATCH])
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xb.to(dtype)), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


def agree(g_loss, t_loss, t_loss64, label):
    """Step-by-step agreement of gridrun's losses with the float32 reference's.

    Two correct float32 implementations of the same math differ by rounding (another LibTorch,
    oneDNN or BLAS sums in another order), and SGD amplifies such differences step by step: on a
    CNN with BatchNorm, Debian's torch 1.13 and the wheel's 2.15 drift apart to ~4e-5 by step 50 on
    some CPUs. The scale of that drift is measured, not guessed: the reference replays the same
    steps in float64, and |float32 - float64| (its running maximum) is how far float32 rounding
    has carried the trajectory by that step. gridrun must agree to max(RTOL, DRIFT_FACTOR x that
    drift): 1e-5 while rounding is small (the first steps, where a wrong momentum, weight decay or
    averaging shows at 1e-4 and more), and no less strict than the arithmetic allows later.
    Returns a failure message or None; prints the figures either way."""
    n = min(len(g_loss), len(t_loss))
    if n == 0:
        return "gridrun-train recorded no steps"
    drift, worst, worst_excess, first_bad = 0.0, 0.0, 0.0, None
    for i in range(n):
        drift = max(drift, abs(t_loss[i] - t_loss64[i]) / abs(t_loss64[i]))
        rel = abs(g_loss[i] - t_loss[i]) / abs(t_loss[i])
        tol = max(RTOL, DRIFT_FACTOR * drift)
        worst = max(worst, rel)
        worst_excess = max(worst_excess, rel / tol)
        if rel > tol and first_bad is None:
            first_bad = (i, rel, tol)
    print(f"{label}: {n} steps, worst relative loss difference {worst:.2e} "
          f"(first {g_loss[0]:.6f} vs {t_loss[0]:.6f}, step {n} {g_loss[n - 1]:.6f} vs {t_loss[n - 1]:.6f}); "
          f"reference float32 vs float64 drift {drift:.2e}; worst difference / tolerance {worst_excess:.2f}")
    if first_bad is not None:
        i, rel, tol = first_bad
        print(f"step {i + 1}: gridrun {g_loss[i]!r} PyTorch {t_loss[i]!r} (float64 {t_loss64[i]!r}): "
              f"{rel:.2e} relative, allowed {tol:.2e}")
        return (f"per-step loss differs by more than max({RTOL}, {DRIFT_FACTOR:g} x the float32 "
                f"rounding drift) relative")
    if n < args.steps:
        return f"too few steps: {n} of {args.steps}"
    return None


def torchscript_mode(tmp):
    import hashlib

    import numpy as np
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from own_files import SmallCNN

    bn = args.bn == "on" or (args.bn == "auto" and args.ranks == 1)
    train_n, test_n = GLOBAL_BATCH * args.steps, 64
    model_file, data_file = os.path.join(tmp, "cnn.pt"), os.path.join(tmp, "fmnist.h5")
    init, out = os.path.join(tmp, "init.h5"), os.path.join(tmp, "out")
    torch.manual_seed(SEED)
    torch.jit.save(torch.jit.script(SmallCNN(1, 10, bn).train()), model_file)
    with open(model_file, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    x_u8, y = idx("train-images-idx3-ubyte.gz", train_n, True), idx("train-labels-idx1-ubyte.gz", train_n, False)
    xt, yt = idx("t10k-images-idx3-ubyte.gz", test_n, True), idx("t10k-labels-idx1-ubyte.gz", test_n, False)
    with h5py.File(data_file, "w") as f:
        f["train/x"], f["train/y"] = x_u8.numpy(), y.numpy()
        f["test/x"], f["test/y"] = xt.numpy(), yt.numpy()
        f.attrs["mean"] = np.array([MEAN], dtype=np.float32)
        f.attrs["std"] = np.array([STD], dtype=np.float32)
        f.attrs["classes"] = np.int64(10)
    cmd = ["mpirun", "-np", str(args.ranks)] + (["--allow-run-as-root"] if os.geteuid() == 0 else []) + [
        args.train, "--model", "torchscript", "--model-file", model_file, "--model-sha256", sha,
        "--dataset", "hdf5", "--data-file", data_file, "--batch-per-rank", str(GLOBAL_BATCH // args.ranks),
        "--ranks", str(args.ranks), "--threads-per-rank", "1",
        "--lr", str(LR), "--momentum", str(MOMENTUM), "--weight-decay", str(WD), "--seed", str(SEED),
        "--epochs", "1", "--max-steps", str(args.steps), "--init-out", init, "--out", out, "--quiet"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: gridrun-train exited {r.returncode}: {r.stderr[-2000:]}")
    (res,) = [f for f in os.listdir(out) if f.endswith(".h5")]
    with h5py.File(os.path.join(out, res), "r") as f:
        g_loss = f["steps/loss"][:].tolist()
    with h5py.File(init, "r") as f:
        # [()] rather than [:]: a 0-d buffer (BatchNorm's num_batches_tracked) may be a scalar set.
        weights = {k: torch.from_numpy(np.array(f[k][()])) for k in f}

    model = torch.jit.load(model_file)
    model.train()
    state = model.state_dict()
    unknown = sorted(set(weights) - set(state))
    missing = sorted(k for k, _ in model.named_parameters() if k not in weights)
    if unknown or missing:
        sys.exit(f"FAIL: --init-out names {sorted(weights)}; not in the module: {unknown}; "
                 f"parameters missing from it: {missing}")
    # gridrun starts from the archive's own weights (rank 0's, broadcast), not new ones.
    moved = [k for k, t in weights.items()
             if not torch.equal(t.to(state[k].dtype).view_as(state[k]), state[k])]
    if moved:
        sys.exit(f"FAIL: the --init-out weights differ from the archive's: {moved}")
    state.update({k: t.to(state[k].dtype).view_as(state[k]) for k, t in weights.items()})
    model.load_state_dict(state)

    def replay(dtype):
        m = torch.jit.load(model_file)
        m.train()
        m.load_state_dict(state)
        return sgd_replay(m.to(dtype), dtype, x_u8, y, train_n, 1, args.steps)

    t_loss, t_loss64 = replay(torch.float32), replay(torch.float64)
    fail = agree(g_loss, t_loss, t_loss64, f"torchscript cnn ({'with' if bn else 'no'} BatchNorm, "
                 f"{len(weights)} tensors), {args.ranks} rank(s)")
    if fail:
        sys.exit("FAIL: " + fail)
    print("ok")
    return 0


if args.torchscript:
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        sys.exit(torchscript_mode(os.path.abspath(args.keep)))
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(torchscript_mode(tmp))

with tempfile.TemporaryDirectory() as tmp:
    init, out = os.path.join(tmp, "init.h5"), os.path.join(tmp, "out")
    cmd = ["mpirun", "-np", str(args.ranks)] + (["--allow-run-as-root"] if os.geteuid() == 0 else []) + [
        args.train, "--model", "mlp", "--dataset", "fashion-mnist", "--train-samples", str(train_n),
        "--test-samples", str(test_n), "--batch-per-rank", str(GLOBAL_BATCH // args.ranks),
        "--ranks", str(args.ranks), "--threads-per-rank", "1",
        "--lr", str(LR), "--momentum", str(MOMENTUM), "--weight-decay", str(WD), "--seed", str(SEED),
        "--epochs", str(max(args.epochs, 1)), "--init-out", init, "--out", out, "--quiet"]
    if not full:
        cmd += ["--max-steps", str(args.steps)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: gridrun-train exited {r.returncode}: {r.stderr[-2000:]}")
    (res,) = [f for f in os.listdir(out) if f.endswith(".h5")]
    with h5py.File(os.path.join(out, res), "r") as f:
        g_loss = f["steps/loss"][:].tolist()
        g_acc = float(f["epochs/test_acc"][-1])
    with h5py.File(init, "r") as f:
        weights = {k: torch.from_numpy(f[k][:]) for k in f}

def mlp(dtype):
    m = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 256), torch.nn.ReLU(),
                            torch.nn.Linear(256, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    names = {"fc1": m[1], "fc2": m[3], "fc3": m[5]}
    with torch.no_grad():
        for k, t in weights.items():
            layer, what = k.split(".")
            getattr(names[layer], what).copy_(t)
    return m.to(dtype)


x_u8, y = idx("train-images-idx3-ubyte.gz", train_n, True), idx("train-labels-idx1-ubyte.gz", train_n, False)
model = mlp(torch.float32)
t_loss = sgd_replay(model, torch.float32, x_u8, y, train_n, max(args.epochs, 1), 0 if full else args.steps)
t_loss64 = sgd_replay(mlp(torch.float64), torch.float64, x_u8, y, train_n, 1, args.steps)
fail = agree(g_loss[:args.steps], t_loss[:args.steps], t_loss64, f"mlp, {args.ranks} rank(s)")
if full:
    xt, yt = idx("t10k-images-idx3-ubyte.gz", test_n, True), idx("t10k-labels-idx1-ubyte.gz", test_n, False)
    with torch.no_grad():
        xb, yb = batch(xt, yt, list(range(test_n)))
        t_acc = (model(xb).argmax(1) == yb).float().mean().item()
    print(f"after {args.epochs} epoch(s): test accuracy gridrun {g_acc:.4f}, PyTorch {t_acc:.4f}")
if fail:
    sys.exit("FAIL: " + fail)
print("ok")
