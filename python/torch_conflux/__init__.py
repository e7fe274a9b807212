"""Conflux as a torch.distributed backend.

    import torch.distributed as dist
    dist.init_process_group("conflux")      # torch loads this package through its entry point

Importing torch_conflux registers the backend "conflux" for devices "cpu" and "cuda". Every
init_method works: rank 0 puts Conflux's unique id in the c10d store torch hands the backend, and
`timeout=` becomes the communicator's timeout. CUDA tensors go through Conflux's staged path on
torch's current stream (hfreduce's GPU path: device -> host -> CPU collective -> device), when
Conflux was built with CUDA's toolkit (`has_cuda_path()`); otherwise they are refused with a message.
After a rank dies, the survivors catch the DistBackendError and call `shrink()`: the group
shrinks to them in place (torch.distributed.shrink_group over cfxCommShrink), without the dead
rank and without a new rendezvous. See the README's "Using Conflux from PyTorch".
"""
import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as _c10d

from . import _C

BACKEND_NAME = "conflux"
__all__ = ["BACKEND_NAME", "failed_ranks", "has_cuda_path", "shrink", "version"]


def version() -> int:
    """Conflux's version code (CFX_VERSION_CODE of the library in use)."""
    return _C.version()


def has_cuda_path() -> bool:
    """True when this build serves CUDA tensors (Conflux built with CUDA's toolkit)."""
    return _C.has_cuda_path()


def _backend_of(group):
    pg = group if group is not None else _c10d._get_default_group()
    return pg._get_backend(torch.device("cpu"))


def failed_ranks(group=None) -> list:
    """The ranks of `group` (default: the world) whose processes are gone, ascending: on this host
    by their pids, on other hosts by the sockets they listened at (cfxCommGetFailedRanks). A rank
    that is alive but stalled is not listed. Works on a group that has failed."""
    return list(_C.failed_ranks(_backend_of(group)))


def shrink(group=None, exclude=None, abort=True):
    """Shrinks `group` (default: the world) to its surviving ranks and returns the new group.

    Every rank not in `exclude` calls it; `exclude` defaults to `failed_ranks(group)`. With
    `abort` (the default, for use after a DistBackendError) the group's work in progress fails
    first; otherwise it completes first. This is torch.distributed.shrink_group over Conflux's
    cfxCommShrink: the survivors form their communicator without rank 0 and without the store's
    rendezvous (the first survivor serves it), keep their order, and a shrunk default group
    becomes the new default (dist.get_rank() and get_world_size() change; other groups are
    destroyed, as shrink_group does). torch clones the group's store for the new group, so the store
    must outlive the dead rank: torchrun's agent store does (TORCHELASTIC_USE_AGENT_STORE); an
    env:// store hosted by rank 0 does not survive rank 0."""
    if exclude is None:
        exclude = failed_ranks(group)
    flags = _c10d.SHRINK_ABORT if abort else _c10d.SHRINK_DEFAULT
    new_group = dist.shrink_group(sorted(exclude), group=group, shrink_flags=flags)
    # shrink_group registers the new backend as Gloo's (NCCL's on a bound CUDA device), and torch's
    # DDP logger then reads it as a ProcessGroupGloo: register it as what it is, for both devices.
    backend = new_group._get_backend(torch.device("cpu"))
    for device in ("cpu", "cuda"):
        new_group._register_backend(torch.device(device), dist.ProcessGroup.BackendType.CUSTOM, backend)
    new_group._set_default_backend(dist.ProcessGroup.BackendType.CUSTOM)
    return new_group


def _register() -> None:
    if BACKEND_NAME not in dist.Backend.backend_list:
        dist.Backend.register_backend(BACKEND_NAME, _C.create_backend, devices=["cpu", "cuda"])


_register()
