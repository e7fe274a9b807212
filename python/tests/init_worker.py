"""One rank of the rendezvous tests: init_process_group("conflux") through init_method tcp:// or
file:// (rank and world size as arguments, no torchrun variables read by torch), then a proper
subset group: exact results on the world and on the subset, nothing for the ranks outside it."""
import datetime
import os
import sys

import torch
import torch.distributed as dist

import torch_conflux  # noqa: F401

RANK, N = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def main(kind):
    if kind == "tcp":
        init = f"tcp://127.0.0.1:{os.environ['MASTER_PORT']}"
    else:
        init = f"file://{sys.argv[2]}"
    # torch's own rendezvous, not the environment's: drop what torchrun would set.
    for v in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        os.environ.pop(v, None)
    dist.init_process_group("conflux", init_method=init, rank=RANK, world_size=N,
                            timeout=datetime.timedelta(seconds=60))
    assert dist.get_backend() == "conflux", dist.get_backend()
    t = torch.full((1031,), float(RANK + 1))
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((1031,), float(N * (N + 1) // 2))), t[:4]
    # A proper subset: the even ranks (for 3 ranks: 0 and 2).
    members = list(range(0, N, 2))
    sub = dist.new_group(members)
    if RANK in members:
        x = torch.full((7,), float(RANK))
        dist.all_reduce(x, group=sub)
        assert torch.equal(x, torch.full((7,), float(sum(members)))), x
        assert dist.get_rank(sub) == members.index(RANK) and dist.get_world_size(sub) == len(members)
        y = torch.arange(4.0) if RANK == members[-1] else torch.zeros(4)
        dist.broadcast(y, src=members[-1], group=sub)
        assert torch.equal(y, torch.arange(4.0)), y
    else:
        assert dist.get_rank(sub) == -1, dist.get_rank(sub)  # not a member: torch's sentinel
    dist.barrier()
    dist.destroy_process_group()
    print(f"OK {kind} rank {RANK}")


if __name__ == "__main__":
    main(sys.argv[1])
