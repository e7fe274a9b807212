"""One rank of FSDP2 (torch.distributed.fsdp.fully_shard) over torch's nn.TransformerEncoder on the
'conflux' backend, on the CPU: each encoder layer and the root sharded, 5 SGD steps on this rank's
slice of the batch; the gathered parameters equal one process on the whole batch to 1e-5 relative."""
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import torch_conflux  # noqa: F401
from models import BATCH, batch, loss_fn, make_model, max_relative, train_one_process

RANK, N = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
STEPS = 5


def main():
    dist.init_process_group("conflux")
    mesh = init_device_mesh("cpu", (N,))
    model = make_model()  # the same initial values on every rank
    for layer in model.encoder.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    share = BATCH // N
    for step in range(STEPS):
        x, y = batch(step)
        opt.zero_grad()
        loss_fn(model, x[RANK * share:(RANK + 1) * share], y[RANK * share:(RANK + 1) * share]).backward()
        opt.step()
    params = [p.full_tensor().detach().clone() for p in model.parameters()]
    err = max_relative(params, train_one_process(STEPS))
    dist.destroy_process_group()
    ok = err <= 1e-5
    print(f"{'OK' if ok else 'FAIL'} fully_shard: max relative difference {err:.2e} (allowed 1e-05)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
