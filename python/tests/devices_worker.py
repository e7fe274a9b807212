"""One rank of the device checks that run without a GPU: 'conflux' is registered for "cpu" and
"cuda", and one backend object serves both devices of the default group; CPU collectives and
barrier run as before on it."""
import os
import sys

import torch
import torch.distributed as dist

import torch_conflux

RANK, N = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def main():
    built = os.environ.get("EXPECT_CUDA_PATH")
    assert dist.Backend.backend_capability["conflux"] == ["cpu", "cuda"], dist.Backend.backend_capability
    if built is not None:
        assert torch_conflux.has_cuda_path() == (built == "1"), torch_conflux.has_cuda_path()
    dist.init_process_group("conflux")
    pg = dist.group.WORLD
    cpu, cuda = pg._get_backend(torch.device("cpu")), pg._get_backend(torch.device("cuda"))
    assert cuda is not None and cpu.name() == cuda.name() == "conflux", (cpu, cuda)
    x = torch.full((5,), float(RANK + 1))
    dist.all_reduce(x)
    assert torch.equal(x, torch.full((5,), float(N * (N + 1) // 2))), x
    dist.barrier()
    dist.destroy_process_group()
    print(f"OK rank {RANK}")


if __name__ == "__main__":
    sys.exit(main())
