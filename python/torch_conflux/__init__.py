"""Conflux as a torch.distributed backend.

    import torch.distributed as dist
    dist.init_process_group("conflux")      # torch loads this package through its entry point

Importing torch_conflux registers the backend "conflux" for devices "cpu" and "cuda". Every
init_method works: rank 0 puts Conflux's unique id in the c10d store torch hands the backend, and
`timeout=` becomes the communicator's timeout. CUDA tensors go through Conflux's staged path on
torch's current stream (hfreduce's GPU path: device -> host -> CPU collective -> device), when
Conflux was built with CUDA's toolkit (`has_cuda_path()`); otherwise they are refused with a message.
See the README's "Using Conflux from PyTorch".
"""
import torch.distributed as dist

from . import _C

BACKEND_NAME = "conflux"
__all__ = ["BACKEND_NAME", "has_cuda_path", "version"]


def version() -> int:
    """Conflux's version code (CFX_VERSION_CODE of the library in use)."""
    return _C.version()


def has_cuda_path() -> bool:
    """True when this build serves CUDA tensors (Conflux built with CUDA's toolkit)."""
    return _C.has_cuda_path()


def _register() -> None:
    if BACKEND_NAME not in dist.Backend.backend_list:
        dist.Backend.register_backend(BACKEND_NAME, _C.create_backend, devices=["cpu", "cuda"])


_register()
