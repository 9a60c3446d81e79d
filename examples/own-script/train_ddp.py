#!/usr/bin/env python3
"""A user's own PyTorch DDP training script, run unchanged by torchrun, by hand, or by gridrun.

Fashion-MNIST (Debian's dataset-fashion-mnist files, read with gzip + numpy), a small CNN, SGD,
DistributedDataParallel with gloo on CPUs and NCCL on GPUs, initialised from the environment
(env://: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), as torchrun and gridrun set it.

Every step all-reduces the loss (mean over ranks); rank 0 prints `step N loss X.XXXXXXXX` (the
script's own output) and, when the gridrun_job helper is importable (gridrun puts it on
PYTHONPATH), the same loss as a protocol line. Each epoch (and a stop before the epoch's end)
evaluates on the test set. Deterministic for a given seed and world size.

  python3 train_ddp.py --train-samples 2048 --max-steps 30                   # one process
  torchrun --nproc-per-node 2 train_ddp.py --train-samples 2048 --max-steps 30
  gridrun run compare-cpu.yaml                                              # as gridrun jobs

Exit codes: 0 done, 2 bad input (flags, missing data files), 75 stopped by SIGTERM/SIGUSR1
after saving a checkpoint that a resumed job continues from.
"""

import argparse
import gzip
import os
import struct
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

try:
    import gridrun_job
except ImportError:  # started without gridrun: the same script, without the protocol lines
    gridrun_job = None

DATA_DIR = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST training-set pixel mean and standard deviation


def fail_input(msg):
    # Exit 2: the program's own input error, which gridrun does not retry.
    print("train_ddp.py: " + msg, file=sys.stderr)
    sys.exit(2)


def read_idx(path):
    """An IDX file (gzip): big-endian magic 0x000008TT (TT 08 = ubyte), then one uint32 per dim."""
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        fail_input("cannot read %s: %s (Debian package dataset-fashion-mnist)" % (path, e))
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08 or not 1 <= ndim <= 3:
        fail_input("%s is not an unsigned-byte IDX file" % path)
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        fail_input("%s holds %d bytes of data, its header says %s" % (path, data.size, dims))
    return data.reshape(dims)


def load(split, limit):
    prefix = "train" if split == "train" else "t10k"
    x = read_idx(os.path.join(DATA_DIR, prefix + "-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(DATA_DIR, prefix + "-labels-idx1-ubyte.gz"))
    if len(x) != len(y):
        fail_input("%s: %d images but %d labels" % (split, len(x), len(y)))
    if limit:
        x, y = x[:limit], y[:limit]
    images = (torch.from_numpy(x.astype(np.float32) / 255.0) - MEAN) / STD
    return TensorDataset(images.unsqueeze(1), torch.from_numpy(y.astype(np.int64)))


class SmallCNN(torch.nn.Module):
    # Strided convolutions instead of max pooling: every operation here has a deterministic
    # backward on CPUs and GPUs, so a seed gives the same losses run after run.
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, stride=2, padding=1)   # 28 -> 14
        self.conv2 = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1)  # 14 -> 7
        self.fc1 = torch.nn.Linear(32 * 7 * 7, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--batch-size", type=int, default=32, help="samples per rank per step")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps; 0 = none")
    p.add_argument("--train-samples", type=int, default=0, help="first N training images; 0 = all")
    p.add_argument("--test-samples", type=int, default=0, help="first N test images; 0 = all")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    a = p.parse_args()  # a bad flag exits 2 here: an input error, as gridrun expects
    for name in ("batch_size", "epochs"):
        if getattr(a, name) < 1:
            p.error("--%s must be at least 1" % name.replace("_", "-"))
    for name in ("max_steps", "train_samples", "test_samples", "seed"):
        if getattr(a, name) < 0:
            p.error("--%s must not be negative" % name.replace("_", "-"))
    if a.lr <= 0:
        p.error("--lr must be positive")
    return a


def setup(args):
    """Rank, world size and device from the torchrun environment; one process without it."""
    distributed = "WORLD_SIZE" in os.environ
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.device == "gpu":
        if not torch.cuda.is_available():
            fail_input("--device gpu, but torch sees no CUDA device")
        # cuBLAS needs this for reproducible matmuls (set before its first use).
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    else:
        device = torch.device("cpu")
    torch.use_deterministic_algorithms(True)
    if distributed:
        dist.init_process_group("nccl" if args.device == "gpu" else "gloo", init_method="env://",
                                rank=rank, world_size=world)
    return distributed, rank, world, device


def all_sum(t, distributed):
    if distributed:
        dist.all_reduce(t)
    return t


def evaluate(model, test, rank, world, device, distributed):
    # Every rank scores its own slice (rank::world) and the sums are all-reduced, so each test
    # image counts once whatever the world size.
    model.eval()
    idx = list(range(rank, len(test), world))
    x, y = test.tensors[0][idx], test.tensors[1][idx]
    sums = torch.zeros(3, dtype=torch.float64, device=device)
    with torch.no_grad():
        for i in range(0, len(idx), 500):
            out = model(x[i:i + 500].to(device))
            t = y[i:i + 500].to(device)
            sums[0] += F.cross_entropy(out, t, reduction="sum").double()
            sums[1] += (out.argmax(1) == t).sum().double()
            sums[2] += len(t)
    model.train()
    all_sum(sums, distributed)
    return (sums[0] / sums[2]).item(), (sums[1] / sums[2]).item()


def main():
    args = parse_args()
    distributed, rank, world, device = setup(args)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)

    train, test = load("train", args.train_samples), load("test", args.test_samples)
    global_batch = args.batch_size * world
    if len(train) < global_batch:
        fail_input("%d training samples, fewer than one global batch (%d)" % (len(train), global_batch))
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True, seed=args.seed,
                                 drop_last=True)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    if gridrun_job:  # what `gridrun calibrate` scales a few measured steps by (docs/own-script.md)
        gridrun_job.log_summary(steps_per_epoch=len(loader))

    model = SmallCNN().to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None) \
        if distributed else model
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)

    # The flag, or gridrun's GRIDRUN_MAX_STEPS (calibration runs a few steps through it), the
    # smaller when both are set.
    limits = [n for n in (args.max_steps, gridrun_job.max_steps() if gridrun_job else None) if n]
    max_steps = min(limits) if limits else 0
    ckpt_dir = gridrun_job.checkpoint_dir() if gridrun_job else None
    ckpt = os.path.join(ckpt_dir, "train_ddp.pt") if ckpt_dir else None
    step, first_epoch, skip = 0, 1, 0
    if ckpt and gridrun_job.resume() and os.path.exists(ckpt):
        state = torch.load(ckpt, map_location=device, weights_only=True)
        model.load_state_dict(state["model"])
        for p, buf in zip(model.parameters(), state["momentum"]):
            opt.state[p]["momentum_buffer"] = buf
        step, first_epoch, skip = (int(v) for v in state["position"])
        if rank == 0:
            print("resumed from %s at step %d (epoch %d)" % (ckpt, step, first_epoch), flush=True)

    stopped = False        # by a signal (SIGTERM/SIGUSR1): exit 75 so that gridrun resumes the job
    done = bool(max_steps) and step >= max_steps
    for epoch in range(first_epoch, args.epochs + 1):
        if done:
            break
        sampler.set_epoch(epoch)  # a different shuffle each epoch, the same on every rank
        sums = torch.zeros(3, dtype=torch.float64, device=device)  # loss x n, correct, n (this rank)
        in_epoch = 0
        for x, y in loader:
            in_epoch += 1
            if in_epoch <= skip:  # resumed mid-epoch: these batches were trained before the stop
                continue
            x, y = x.to(device), y.to(device)
            opt.zero_grad(set_to_none=True)
            out = ddp(x)
            loss = F.cross_entropy(out, y)
            loss.backward()
            opt.step()
            step += 1
            sums[0] += loss.detach().double() * len(y)
            sums[1] += (out.argmax(1) == y).sum().double()
            sums[2] += len(y)
            # One all-reduce carries the loss and whether this rank was asked to stop: a signal
            # reaches each rank at its own moment, and all of them must leave the loop together.
            want_stop = bool(gridrun_job and gridrun_job.should_stop())
            t = torch.stack([loss.detach().float(), torch.tensor(float(want_stop), device=device)])
            all_sum(t, distributed)
            mean_loss = (t[0] / world).item()
            if rank == 0:
                print("step %d loss %.8f" % (step, mean_loss), flush=True)
            if gridrun_job:
                gridrun_job.log_step(mean_loss, samples=global_batch, step=step, lr=args.lr)
            asked = t[1].item() > 0
            limit_reached = bool(max_steps) and step >= max_steps
            # should_stop() also answers True at the job's step limit: that is an ordinary end.
            stopped = asked and not limit_reached
            if asked or limit_reached:
                done = True
                break
        skip = 0
        if stopped:
            # Checkpoint and leave without evaluating: the resumed job finishes this epoch and
            # logs it then (its train figures cover the steps after the resume).
            if ckpt and rank == 0:
                # Written whole, then renamed: a kill during the write leaves the previous file.
                # Tensors only: torch 1.13's weights_only loader refuses the floats of an
                # optimizer's state_dict, so the momentum buffers are saved by themselves.
                torch.save({"model": model.state_dict(),
                            "momentum": [opt.state[p]["momentum_buffer"] for p in model.parameters()],
                            "position": torch.tensor([step, epoch, in_epoch])}, ckpt + ".tmp")
                os.replace(ckpt + ".tmp", ckpt)
            break
        all_sum(sums, distributed)
        test_loss, test_acc = evaluate(model, test, rank, world, device, distributed)
        figures = {"test_loss": test_loss, "test_acc": test_acc}
        if sums[2] > 0:  # else a resumed job whose stop came after the epoch's last step
            figures = {"train_loss": (sums[0] / sums[2]).item(), "train_acc": (sums[1] / sums[2]).item(),
                       **figures}
        if rank == 0:
            print("epoch %d " % epoch + " ".join("%s %.6f" % kv for kv in figures.items()), flush=True)
        if gridrun_job:
            gridrun_job.log_epoch(epoch, **figures)

    if gridrun_job and rank == 0 and not stopped:
        gridrun_job.log_summary(final_step=step)
    code = 75 if stopped else 0  # 75: interrupted, resumable (gridrun_job.EXIT_INTERRUPTED)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
        # Debian's torch 1.13 can deadlock at interpreter exit (seen about 1 run in 20 on 2 ranks):
        # the DDP reducer's destructor, run with the GIL held, joins gloo's worker thread, which
        # waits for the GIL to free a tensor's Python object. Nothing is left to clean up here
        # (files closed, group destroyed), so leave without the interpreter's teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
