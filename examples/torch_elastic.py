#!/usr/bin/env python3
"""A DDP job that survives a dead rank: the others shrink the group and finish, with no restart.

    torchrun --standalone --nproc-per-node 4 examples/torch_elastic.py --kill-rank 2 --kill-step 5

Rank 2 SIGKILLs itself at step 5. The survivors' backward fails with DistBackendError naming it;
each asks torch_conflux.failed_ranks() who is gone, calls torch_conflux.shrink() (the world group
becomes the three survivors, ranked in order, without a new rendezvous), re-shards the global batch
over three ranks, wraps the same model in a new DDP and redoes step 5. Every step's global batch
is the same whatever the number of ranks, so the run equals one process that takes the same steps
(`--replay`, which python/tests/test_elastic.py compares bitwise with what the survivors hold).

torchrun stops every worker as soon as one fails, so each torchrun worker here is a supervisor that
runs the rank as its child and exits cleanly when that child was the one meant to be killed: the
survivors are torchrun's to keep. (TorchFT does the same with one torchrun per replica group.)
"""
import argparse
import os
import pathlib
import signal
import subprocess
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

GLOBAL_BATCH = 12  # divides over 4, 3, 2 and 1 ranks
FEATURES, HIDDEN = 8, 16
LR = 0.125


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 1))


def global_batch(step: int):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(GLOBAL_BATCH, FEATURES, generator=g)
    return x, x.sum(dim=1, keepdim=True).sin()


def shard(step: int, rank: int, world: int):
    x, y = global_batch(step)
    n = GLOBAL_BATCH // world
    return x[rank * n:(rank + 1) * n], y[rank * n:(rank + 1) * n]


def local_grads(net: nn.Module, step: int, rank: int, world: int):
    net.zero_grad(set_to_none=True)
    x, y = shard(step, rank, world)
    nn.functional.mse_loss(net(x), y).backward()
    return [p.grad.detach().clone() for p in net.parameters()]


def replay(steps: int, kill_step: int, world: int) -> list:
    """One process: the same steps, each rank's gradient made as DDP's ranks make it, multiplied by
    1/world (DDP's reducer scales each gradient so) and added in rank order (as Conflux's reduction
    adds ranks, bitwise the same on every rank), then SGD."""
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    for step in range(steps):
        w = world if step < kill_step else world - 1
        grads = [local_grads(net, step, r, w) for r in range(w)]
        for i, p in enumerate(net.parameters()):
            total = grads[0][i] * (1.0 / w)
            for r in range(1, w):
                total = total + grads[r][i] * (1.0 / w)
            p.grad = total
        opt.step()
    return [p.detach().clone() for p in net.parameters()]


def train(args) -> int:
    import torch_conflux

    dist.init_process_group("conflux")
    start_rank = dist.get_rank()
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    ddp = DDP(net)
    step = 0
    while step < args.steps:
        if step == args.kill_step and start_rank == args.kill_rank:
            os.kill(os.getpid(), signal.SIGKILL)
        rank, world = dist.get_rank(), dist.get_world_size()
        opt.zero_grad(set_to_none=True)
        x, y = shard(step, rank, world)
        try:
            nn.functional.mse_loss(ddp(x), y).backward()
        except dist.DistBackendError as e:
            t0 = time.monotonic()
            gone = torch_conflux.failed_ranks()
            print(f"[rank {start_rank}] step {step} failed: {str(e).splitlines()[0][:160]}", flush=True)
            del ddp  # its reducer's hooks go with it
            torch_conflux.shrink(exclude=gone)
            ddp = DDP(net)
            print(f"[rank {start_rank}] ranks {gone} gone; now rank {dist.get_rank()} of {dist.get_world_size()}, "
                  f"shrunk and re-wrapped in {time.monotonic() - t0:.3f} s", flush=True)
            continue  # the same step again, over the survivors
        opt.step()
        step += 1
    if args.out:
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        torch.save([p.detach() for p in net.parameters()], out / f"params_rank{start_rank}.pt")
    print(f"[rank {start_rank}] finished {args.steps} steps as rank {dist.get_rank()} of {dist.get_world_size()}",
          flush=True)
    dist.destroy_process_group()
    return 0


def supervise(args) -> int:
    """torchrun's worker: runs the rank as a child; a planned kill of it is no failure of the job."""
    child = subprocess.run([sys.executable, __file__, *sys.argv[1:]], env=dict(os.environ, CFX_ELASTIC_CHILD="1"))
    if child.returncode == -signal.SIGKILL and int(os.environ["RANK"]) == args.kill_rank:
        print(f"[supervisor] rank {args.kill_rank} was killed at step {args.kill_step}, as planned", flush=True)
        return 0
    return child.returncode if child.returncode >= 0 else 128 - child.returncode


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--kill-rank", type=int, default=2)
    p.add_argument("--kill-step", type=int, default=5)
    p.add_argument("--out", help="folder for each survivor's final parameters (params_rank<R>.pt)")
    args = p.parse_args()
    return train(args) if os.environ.get("CFX_ELASTIC_CHILD") else supervise(args)


if __name__ == "__main__":
    sys.exit(main())
