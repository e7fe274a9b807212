"""One rank of DDP over torch's nn.TransformerEncoder on the 'conflux' backend: 5 steps equal one
process on the whole batch to 1e-5 relative; no_sync accumulation likewise; bf16_compress_hook to
within bf16 rounding. Ranks must hold bitwise identical parameters after every run."""
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

import torch_conflux  # noqa: F401
from models import BATCH, batch, loss_fn, make_model, max_relative, norm_relative, train_one_process

RANK, N = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
STEPS = 5


def train(mode):
    model = DDP(make_model(seed=RANK), bucket_cap_mb=0.05)  # DDP broadcasts rank 0's parameters
    if mode == "bf16_hook":
        model.register_comm_hook(dist.group.WORLD, bf16_hook)
    elif mode == "fp16_hook":
        model.register_comm_hook(dist.group.WORLD, default_hooks.fp16_compress_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    share = BATCH // N
    for step in range(STEPS):
        x, y = batch(step)
        x, y = x[RANK * share:(RANK + 1) * share], y[RANK * share:(RANK + 1) * share]
        opt.zero_grad()
        if mode == "no_sync":
            half = share // 2 if share > 1 else share
            with model.no_sync():
                (loss_fn(model, x[:half], y[:half]) * half / share).backward()
            (loss_fn(model, x[half:], y[half:]) * (share - half) / share).backward()
        else:
            loss_fn(model, x, y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def bf16_hook(state, bucket) -> torch.futures.Future[torch.Tensor]:
    """torch's own bf16_compress_hook. DDP refuses that hook by name unless torch has CUDA and NCCL
    (a check for the hardware, not the backend); under another name the same code runs on the CPU."""
    return default_hooks.bf16_compress_hook(state, bucket)


def identical_across_ranks(params):
    flat = torch.cat([p.flatten() for p in params])
    gathered = [torch.empty_like(flat) for _ in range(N)]
    dist.all_gather(gathered, flat)
    return all(torch.equal(g.view(torch.int32), flat.view(torch.int32)) for g in gathered)


def main():
    dist.init_process_group("conflux")
    reference = train_one_process(STEPS)
    failed = False
    # fp32 runs: element-wise relative to 1e-5. Compressed hooks: norm-wise within the wire dtype's
    # epsilon (fp16 2^-11, bf16 2^-8), and not equal to fp32 (the hook really ran).
    runs = (("plain", max_relative, 1e-5), ("no_sync", max_relative, 1e-5),
            ("fp16_hook", norm_relative, 2.0 ** -11), ("bf16_hook", norm_relative, 2.0 ** -8))
    for mode, measure, tolerance in runs:
        if mode == "no_sync" and BATCH // N < 2:
            continue
        params = train(mode)
        err = measure(params, reference)
        same = identical_across_ranks(params)
        ok = err <= tolerance and same and (measure is max_relative or N == 1 or err > 0)
        failed |= not ok
        print(f"{'OK' if ok else 'FAIL'} {mode}: {measure.__name__} difference {err:.2e} (allowed {tolerance:.1e}), "
              f"ranks identical: {same}")
    dist.destroy_process_group()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
