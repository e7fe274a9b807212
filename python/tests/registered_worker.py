"""One rank of the registered-memory checks (issue #31, section 3): the backend allocates tensors in
Conflux's registered memory (supports_tensor_alloc, allocate_tensor); all_reduce,
all_gather_into_tensor and reduce_scatter_tensor on them give the exact results and run with no
staging copy (the peers' buffers are mapped here: their memory files appear in /proc/self/maps);
then FSDP2 with set_allocate_memory_from_process_group_for_comm(True) trains exactly as without it.
Argument: 'tensors' or 'fsdp'."""
import os
import sys

import torch
import torch.distributed as dist

import torch_conflux  # noqa: F401

RANK, N = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
CPU = torch.device("cpu")


def peers_mapped():
    """Peers' registered buffers mapped here: Conflux's memory files mapped, less this process's own
    (each own allocation keeps its file open; a peer's is closed once mapped)."""
    with open("/proc/self/maps") as f:
        maps = sum("memfd:cfx-shareable" in line for line in f)
    own = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            own += "memfd:cfx-shareable" in os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    return maps - own


def fail(msg):
    print(f"FAIL rank {RANK}: {msg}")
    sys.exit(1)


def tensors():
    backend = dist.group.WORLD._get_backend(CPU)
    if not backend.supports_tensor_alloc(CPU):
        fail("supports_tensor_alloc(cpu) is False")
    n = (1 << 20) + 5  # 4 MiB of fp32: above CFX_REGISTERED_MIN_BYTES
    t = backend.allocate_tensor(n, dtype=torch.float32, device=CPU)
    if t.numel() != n or t.dtype != torch.float32 or t.device != CPU:
        fail(f"allocate_tensor gave {t.numel()} {t.dtype} {t.device}")
    t.copy_(torch.arange(n, dtype=torch.float32) + RANK)
    dist.all_reduce(t)
    want = N * torch.arange(n, dtype=torch.float32) + N * (N - 1) / 2
    if not torch.equal(t, want):
        fail("all_reduce on registered memory")
    # all_gather_into_tensor and reduce_scatter_tensor, with registered inputs and outputs.
    m = 1 << 18
    inp = backend.allocate_tensor(m, dtype=torch.bfloat16, device=CPU)
    out = backend.allocate_tensor(m * N, dtype=torch.bfloat16, device=CPU)
    inp.fill_(RANK + 1)
    dist.all_gather_into_tensor(out, inp)
    if not torch.equal(out, torch.arange(1, N + 1, dtype=torch.bfloat16).repeat_interleave(m)):
        fail("all_gather_into_tensor on registered memory")
    rs = backend.allocate_tensor(m, dtype=torch.bfloat16, device=CPU)
    dist.reduce_scatter_tensor(rs, out)
    if not torch.equal(rs, torch.full((m,), float(N * (RANK + 1)), dtype=torch.bfloat16)):
        fail("reduce_scatter_tensor on registered memory")
    if N > 1 and peers_mapped() == 0:
        fail("no peer's buffer was mapped: the collectives were staged")
    del t, inp, out, rs
    print(f"OK registered tensors on {N} ranks")


def fsdp():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from models import BATCH, batch, loss_fn, make_model, max_relative, train_one_process

    mesh = init_device_mesh("cpu", (N,))
    model = make_model()
    for layer in model.encoder.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    for module in [*model.encoder.layers, model]:  # a setting of each FSDP module's own group
        module.set_allocate_memory_from_process_group_for_comm(True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    share = BATCH // N
    for step in range(5):
        x, y = batch(step)
        opt.zero_grad()
        loss_fn(model, x[RANK * share:(RANK + 1) * share], y[RANK * share:(RANK + 1) * share]).backward()
        opt.step()
    if N > 1 and peers_mapped() == 0:
        fail("FSDP2's communication buffers did not come from Conflux (no peer buffer mapped)")
    params = [p.full_tensor().detach().clone() for p in model.parameters()]
    err = max_relative(params, train_one_process(5))
    if err > 1e-5:
        fail(f"fully_shard with registered buffers: max relative difference {err:.2e} (allowed 1e-05)")
    print(f"OK fully_shard with allocate-from-process-group: max relative difference {err:.2e}")


def main():
    dist.init_process_group("conflux")
    {"tensors": tensors, "fsdp": fsdp}[sys.argv[1]]()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
