"""One rank of DDP (torch's nn.TransformerEncoder, 5 SGD steps) on the 'conflux' backend with the exact
reductions on (CFX_REDUCE_EXACT=1, set by test_exact.py): prints the SHA-256 of its final parameters'
bytes. Every rank's data shard is the same whatever the host layout, so the exact sums, hence the
parameters, must not depend on it."""
import hashlib
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import torch_conflux  # noqa: F401
from models import BATCH, batch, loss_fn, make_model

RANK, N = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def main():
    dist.init_process_group("conflux")
    model = DDP(make_model(seed=0), bucket_cap_mb=0.05)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    share = BATCH // N
    for step in range(5):
        x, y = batch(step)
        opt.zero_grad()
        loss_fn(model, x[RANK * share:(RANK + 1) * share], y[RANK * share:(RANK + 1) * share]).backward()
        opt.step()
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().contiguous().view(torch.uint8).numpy().tobytes())
    print(f"params {digest.hexdigest()}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
