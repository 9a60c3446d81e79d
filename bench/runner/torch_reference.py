#!/usr/bin/env python3
"""PyTorch reference loop for bench_libtorch.py: eager (1 process) or DDP over gloo (N processes).

The same models as gridrun's mlp (784-256-128-10), lenet (conv1 padded by 2 on 28x28) and the
CIFAR-style resnet18 (3x3 stride-1 stem, input zero-padded to 32x32 as gridrun does for 28x28),
on Fashion-MNIST-shaped input (1x28x28, 10 classes, random tensors: speed depends on the shape, not
the pixels), SGD momentum 0.9, one intra-op thread per process. Launched by mpirun only to start
the processes (rank and size from OMPI_COMM_WORLD_*); with one process it is a plain eager loop.
Prints the steady-state global samples/s (rank 0), timed between barriers after the warm-up.

  mpirun -np R PYTHON torch_reference.py MODEL BATCH_PER_RANK STEPS WARMUP PORT
"""
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                         nn.Linear(128, 10))


def lenet():
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


class Basic(nn.Module):
    def __init__(self, i, o, stride):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(i, o, 3, stride, 1, bias=False), nn.BatchNorm2d(o)
        self.c2, self.b2 = nn.Conv2d(o, o, 3, 1, 1, bias=False), nn.BatchNorm2d(o)
        self.sc = nn.Sequential()
        if stride != 1 or i != o:
            self.sc = nn.Sequential(nn.Conv2d(i, o, 1, stride, bias=False), nn.BatchNorm2d(o))

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(y + self.sc(x))


class ResNet18(nn.Module):
    def __init__(self):
        super().__init__()
        layers, i = [nn.Conv2d(1, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()], 64
        for stage, o in enumerate((64, 128, 256, 512)):
            for b in range(2):
                layers.append(Basic(i, o, 2 if stage > 0 and b == 0 else 1))
                i = o
        self.body, self.fc = nn.Sequential(*layers), nn.Linear(512, 10)

    def forward(self, x):
        return self.fc(self.body(F.pad(x, (2, 2, 2, 2))).mean((2, 3)))


def timed_sgd(model, shape, n, batch, steps, warmup, rank, world, dist=None):
    """Global samples/s of `steps` SGD steps (momentum 0.9) after `warmup`, on n random samples of
    `shape` drawn per rank, timed between barriers when `dist` (torch.distributed) is given. Also
    used by ddp_reference.py: one timed loop for every PyTorch reference."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(rank)
    data = torch.randn(n, *shape, generator=gen)
    labels = torch.randint(0, 10, (n,), generator=gen)
    t0 = None
    for s in range(warmup + steps):
        if s == warmup:
            if dist:
                dist.barrier()
            t0 = time.perf_counter()
        idx = torch.randint(0, n, (batch,), generator=gen)
        loss = F.cross_entropy(model(data[idx]), labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()
    if dist:
        dist.barrier()
    return steps * batch * world / (time.perf_counter() - t0)


def main():
    name, batch, steps, warmup, port = sys.argv[1], *map(int, sys.argv[2:6])
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = {"mlp": mlp, "lenet": lenet, "resnet18": ResNet18}[name]()
    dist = None
    if world > 1:
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=world)
        model = nn.parallel.DistributedDataParallel(model)
    rate = timed_sgd(model, (1, 28, 28), 2048, batch, steps, warmup, rank, world, dist)
    if rank == 0:
        print(f"{rate:.3f}")
    if dist:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
