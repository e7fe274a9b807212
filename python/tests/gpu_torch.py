"""The PyTorch backend on CUDA tensors (CTest: Gpu.torch). Exits 77 (skipped) only where it cannot
run at all: torch is a CPU build, this machine has no NVIDIA GPU, or torch_conflux was built without
Conflux's CUDA path. A GPU that is there but that CUDA cannot use is a failure. Otherwise it prints the
device and driver, and runs cuda_worker.py at 1 to 4 ranks on GPU 0, DDP at 2 ranks, and a dead peer
at 3 ranks."""
import ctypes
import os
import sys

import torch

import launch
import torch_conflux


def no_nvidia_driver():
    """Neither NVIDIA's device node nor its driver library is on this machine."""
    if os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0"):
        return False
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return True
    return False


if torch.version.cuda is None:
    print(f"SKIP: torch {torch.__version__} is a CPU build")
    sys.exit(77)
if not torch.cuda.is_available():
    if no_nvidia_driver():
        print("SKIP: no NVIDIA driver or device on this machine")
        sys.exit(77)
    print(f"FAIL: this machine has NVIDIA's driver, but torch {torch.__version__} (CUDA {torch.version.cuda}) "
          f"finds no usable device ({torch.cuda.device_count()} devices)")
    sys.exit(1)
if not torch_conflux.has_cuda_path():
    print("SKIP: torch_conflux was built without Conflux's CUDA path")
    sys.exit(77)
driver = ctypes.c_int(0)
ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(driver))
print(f"GPU 0: {torch.cuda.get_device_name(0)}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
      f"driver {driver.value}")

failed = False
for mode, ranks in [("collectives", n) for n in (1, 2, 3, 4)] + [("ddp", 2), ("dead_peer", 3)]:
    result = launch.run("cuda_worker.py", ranks, mode, timeout=600, env={"CFX_CUDA_CHUNK_BYTES": "65536"})
    ok = all(c == 0 for c in result.codes[: ranks - 1 if mode == "dead_peer" else ranks])
    print(f"{'PASS' if ok else 'FAIL'} {mode} at {ranks} ranks ({result.seconds:.0f} s)")
    if not ok:
        print(result.text())
        failed = True
sys.exit(1 if failed else 0)
