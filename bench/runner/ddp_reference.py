#!/usr/bin/python3
"""PyTorch DDP (gloo) reference for the 2-rank CPU throughput benchmark.

Same model definitions as gridrun's `mlp` and `lenet` (runner/src/models_basic.cpp), same SGD
(momentum 0.9), batch per rank and threads; synthetic 3x32x32 inputs. Launched by mpirun only to
start the processes (rank/size from OMPI_COMM_WORLD_*); communication is gloo over TCP loopback.
Prints steady-state global samples/s (rank 0).
  mpirun -np 2 /usr/bin/python3 ddp_reference.py MODEL BATCH STEPS WARMUP THREADS PORT
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_reference import timed_sgd  # noqa: E402  (the one timed loop of the references)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(3072, 256), nn.Linear(256, 128), nn.Linear(128, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x.flatten(1))))))


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(3, 6, 5), nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(h.flatten(1))))))


def main():
    model_name, batch, steps, warmup, threads, port = sys.argv[1:7]
    batch, steps, warmup, threads = int(batch), int(steps), int(warmup), int(threads)
    rank, world = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = port
    torch.set_num_threads(threads)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel({"mlp": Mlp, "lenet": LeNet}[model_name]())
    rate = timed_sgd(model, (3, 32, 32), 4096, batch, steps, warmup, rank, world, dist)
    if rank == 0:
        print(f"{rate:.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
