# SPDX-License-Identifier: GPL-3.0-or-later
"""ddp_step.py - a few DistributedDataParallel training steps whose losses tools/gpu-check
compares between two runs: backend nccl (with LD_PRELOAD of libblink-nccl.so, every gradient
allreduce runs on blinkc's plan) and backend gloo (PyTorch's own CPU collectives). Every rank
trains the same small model on its own fixed batch, so any byte lost or doubled by a collective
changes the losses. Run under torchrun; all ranks may share one GPU (MPS). Rank 0 prints one
line per step: 'step N loss X' with X in full precision (repr), then 'done'.

    python3 -m torch.distributed.run --nproc-per-node 4 ddp_step.py --backend nccl|gloo
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=["nccl", "gloo"], required=True)
    ap.add_argument("--steps", type=int, default=5)
    args = ap.parse_args()
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    # Every rank on the first visible GPU; the drop-in plays device RANK of its plan.
    os.environ.setdefault("BLINK_DEVICE", str(int(os.environ.get("LOCAL_RANK", rank))))
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    if args.backend == "nccl":
        dist.init_process_group("nccl", device_id=dev)
    else:
        dist.init_process_group("gloo")

    torch.manual_seed(1234)  # the same initial model everywhere
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    ).to(dev)
    ddp = DDP(model, device_ids=[0])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(99 + rank)  # each rank its own batch
    x = torch.randn(64, 256, generator=gen).to(dev)
    y = torch.randint(0, 10, (64,), generator=gen).to(dev)

    for step in range(args.steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        # The mean loss over ranks, so every rank's batch counts in the compared number.
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        if rank == 0:
            print(f"step {step} loss {repr(mean.item() / world)}", flush=True)
    dist.barrier()
    if rank == 0:
        print("done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
