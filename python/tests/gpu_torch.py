"""The PyTorch backend on CUDA tensors (CTest: Gpu.torch). Exits 77 (skipped) where torch has no
CUDA device or torch_conflux was built without Conflux's CUDA path; otherwise runs cuda_worker.py
at 1 to 4 ranks on GPU 0, DDP at 2 ranks, and a dead peer at 3 ranks."""
import sys

import torch

import launch
import torch_conflux

if not torch.cuda.is_available():
    print("SKIP: torch has no CUDA device here")
    sys.exit(77)
if not torch_conflux.has_cuda_path():
    print("SKIP: torch_conflux was built without Conflux's CUDA path")
    sys.exit(77)

failed = False
for mode, ranks in [("collectives", n) for n in (1, 2, 3, 4)] + [("ddp", 2), ("dead_peer", 3)]:
    result = launch.run("cuda_worker.py", ranks, mode, timeout=600, env={"CFX_CUDA_CHUNK_BYTES": "65536"})
    ok = all(c == 0 for c in result.codes[: ranks - 1 if mode == "dead_peer" else ranks])
    print(f"{'PASS' if ok else 'FAIL'} {mode} at {ranks} ranks ({result.seconds:.0f} s)")
    if not ok:
        print(result.text())
        failed = True
sys.exit(1 if failed else 0)
