"""PyTorch's own parallel libraries on one backend (argv[1]: conflux or gloo), each result against the
same computation in one process: DTensor redistribute between Shard(0), Shard(1), Replicate and
Partial (even and uneven shards); parallelize_module with ColwiseParallel/RowwiseParallel and with
SequenceParallel; torch.distributed.pipelining's schedules (one and two stages per rank); FSDP2 on a
(2, 2) DeviceMesh with TP (4 ranks); DCP save and load of a sharded state dict; the object
collectives and monitored_barrier.

Each case prints one line, 'case <name>: ok', 'case <name>: refused by torch: <message>' (torch
itself declines it for this backend on CPU) or 'case <name>: FAIL <why>'. The driver
(test_parallel.py) fails on any FAIL and on a refusal the README does not list."""
import copy
import datetime
import os
import sys
import tempfile
import traceback

import torch
import torch.distributed as dist
import torch_conflux  # noqa: F401  registers the backend
from torch import nn

BACKEND = sys.argv[1]
dist.init_process_group(BACKEND, timeout=datetime.timedelta(seconds=60))
RANK, N = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)


class Refused(Exception):
    """Torch declines the case for this backend or device (its own message)."""


def case(fn):
    try:
        fn()
        print(f"case {fn.__name__}: ok", flush=True)
    except Refused as e:
        print(f"case {fn.__name__}: refused by torch: {e}", flush=True)
    except Exception:  # noqa: BLE001  every failure is reported, and the job goes on
        why = traceback.format_exc().strip().splitlines()
        print(f"case {fn.__name__}: FAIL {' | '.join(why[-4:])}", flush=True)


def close(a, b, what, atol=1e-5):
    if not torch.allclose(a, b, atol=atol, rtol=1e-5):
        raise AssertionError(f"{what}: differs from one process by {(a - b).abs().max().item()}")


def mesh1d():
    from torch.distributed.device_mesh import init_device_mesh
    return init_device_mesh("cpu", (N,))


def dtensor_redistribute():
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
    mesh = mesh1d()
    for rows, cols in ((4 * N, 6 * N), (4 * N + 1, 3 * N - 1)):  # even shards, then uneven ones
        g = torch.Generator().manual_seed(rows)
        full = torch.randn(rows, cols, generator=g)
        for src in (Shard(0), Shard(1), Replicate()):
            d = distribute_tensor(full, mesh, [src])
            for dst in (Shard(0), Shard(1), Replicate()):
                e = d.redistribute(mesh, [dst])
                if not torch.equal(e.full_tensor(), full):
                    raise AssertionError(f"{rows}x{cols} {src} -> {dst}")
    local = torch.arange(15, dtype=torch.float32).view(3, 5) * (RANK + 1)
    want = torch.arange(15, dtype=torch.float32).view(3, 5) * (N * (N + 1) // 2)
    p = DTensor.from_local(local, mesh, [Partial()])
    for dst in (Replicate(), Shard(0), Shard(1)):
        if not torch.equal(p.redistribute(mesh, [dst]).full_tensor(), want):
            raise AssertionError(f"Partial -> {dst}")


class MLP(nn.Module):
    def __init__(self, dim=16, hidden=32):
        super().__init__()
        self.w1, self.w2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x):
        return self.w2(torch.relu(self.w1(x)))


def full(t):
    from torch.distributed.tensor import DTensor
    return t.full_tensor() if isinstance(t, DTensor) else t


def tensor_parallel():
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    torch.manual_seed(1)
    ref = MLP()
    tp = parallelize_module(copy.deepcopy(ref), mesh1d(), {"w1": ColwiseParallel(), "w2": RowwiseParallel()})
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(2))
    out_ref, out_tp = ref(x), tp(x)
    close(full(out_tp), out_ref, "output")
    out_ref.square().sum().backward()
    full(out_tp).square().sum().backward()
    for (name, a), (_, b) in zip(ref.named_parameters(), tp.named_parameters()):
        close(full(b.grad), a.grad, f"grad of {name}")


class SPModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.mlp = MLP()

    def forward(self, x):
        return self.mlp(self.norm(x))


def sequence_parallel():
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, SequenceParallel,
                                                   parallelize_module)
    torch.manual_seed(3)
    ref = SPModel()
    sp = parallelize_module(copy.deepcopy(ref), mesh1d(), {
        "norm": SequenceParallel(),
        "mlp.w1": ColwiseParallel(input_layouts=Shard(1)),
        "mlp.w2": RowwiseParallel(output_layouts=Shard(1)),
    })
    x = torch.randn(2, 4 * N, 16, generator=torch.Generator().manual_seed(4))
    out_ref = ref(x)
    out = sp(x.chunk(N, dim=1)[RANK])  # each rank holds its part of the sequence
    close(full(out), out_ref.chunk(N, dim=1)[RANK] if not hasattr(out, "full_tensor") else out_ref, "output")
    out_ref.square().sum().backward()
    local = out.to_local() if hasattr(out, "to_local") else out
    # The loss of this rank's part; every rank's parts together are the whole loss.
    local.square().sum().backward()
    for (name, a), (_, b) in zip(ref.named_parameters(), sp.named_parameters()):
        close(full(b.grad), a.grad, f"grad of {name}", atol=1e-4)


def run_schedule(kind, stages_per_rank):
    from torch.distributed.pipelining import PipelineStage
    import torch.distributed.pipelining as pp
    n_stages = N * stages_per_rank
    torch.manual_seed(5)
    layers = [nn.Linear(8, 8) for _ in range(n_stages)]
    ref = nn.Sequential(*copy.deepcopy(layers))
    if kind == "ScheduleZBVZeroBubble":  # V shape: rank r holds stages r and 2N-1-r
        ids = [RANK, 2 * N - 1 - RANK]
    else:
        ids = [RANK + k * N for k in range(stages_per_rank)]
    stages = [PipelineStage(copy.deepcopy(layers[i]), i, n_stages, torch.device("cpu")) for i in ids]
    micro = 2 * N
    x = torch.randn(micro * 2, 8, generator=torch.Generator().manual_seed(6))
    y = torch.randn(micro * 2, 8, generator=torch.Generator().manual_seed(7))
    loss_fn = nn.MSELoss()
    cls = getattr(pp, kind)
    sched = cls(stages[0] if stages_per_rank == 1 else stages, n_microbatches=micro, loss_fn=loss_fn)
    first = 0 in ids
    last = n_stages - 1 in ids
    args = (x,) if first else ()
    kwargs = {"target": y, "losses": []} if last else {}
    sched.step(*args, **kwargs)
    # One process: the same micro-batches, each loss backward on its own; the schedule averages
    # the gradients over the micro-batches (scale_grads, its default).
    for xs, ys in zip(x.chunk(micro), y.chunk(micro)):
        (loss_fn(ref(xs), ys) / micro).backward()
    for stage, i in zip(stages, ids):
        for (name, a), (_, b) in zip(ref[i].named_parameters(), stage.submod.named_parameters()):
            close(b.grad, a.grad, f"{kind} stage {i} grad of {name}", atol=1e-5)


def make_schedule_case(kind, stages_per_rank):
    def fn():
        run_schedule(kind, stages_per_rank)
    fn.__name__ = f"pipelining_{kind}"
    return fn


def fsdp2_with_tp():
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    if N != 4:
        return
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    dp = mesh["dp"].get_local_rank()
    torch.manual_seed(8)
    ref = MLP()
    model = parallelize_module(copy.deepcopy(ref), mesh["tp"], {"w1": ColwiseParallel(), "w2": RowwiseParallel()})
    fully_shard(model, mesh=mesh["dp"])
    xs = [torch.randn(4, 16, generator=torch.Generator().manual_seed(9 + d)) for d in range(2)]
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        model(xs[dp]).square().sum().backward()
        opt.step()
        ref_opt.zero_grad()
        (sum(ref(x).square().sum() for x in xs) / 2).backward()  # FSDP averages over dp
        ref_opt.step()
    for (name, a), (_, b) in zip(ref.named_parameters(), model.named_parameters()):
        close(full(b.data if not hasattr(b, "full_tensor") else b), a.data, f"parameter {name}", atol=1e-5)


def dcp_save_load():
    import torch.distributed.checkpoint as dcp
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    plan = {"w1": ColwiseParallel(), "w2": RowwiseParallel()}
    torch.manual_seed(10)
    model = parallelize_module(MLP(), mesh1d(), plan)
    where = [tempfile.mkdtemp(prefix="cfx-dcp-") if RANK == 0 else None]
    dist.broadcast_object_list(where, src=0)
    dcp.save({"model": model.state_dict()}, checkpoint_id=where[0])
    torch.manual_seed(11)
    other = parallelize_module(MLP(), mesh1d(), plan)
    sd = {"model": other.state_dict()}
    dcp.load(sd, checkpoint_id=where[0])
    other.load_state_dict(sd["model"])
    for (name, a), (_, b) in zip(model.named_parameters(), other.named_parameters()):
        if not torch.equal(full(a), full(b)):
            raise AssertionError(f"{name} after load")


def object_collectives():
    got = [None] * N
    dist.all_gather_object(got, {"rank": RANK, "x": [RANK] * RANK})
    if got != [{"rank": r, "x": [r] * r} for r in range(N)]:
        raise AssertionError(f"all_gather_object: {got}")
    gathered = [None] * N if RANK == N - 1 else None
    dist.gather_object(("g", RANK), gathered, dst=N - 1)
    if RANK == N - 1 and gathered != [("g", r) for r in range(N)]:
        raise AssertionError(f"gather_object: {gathered}")
    objs = [{"from": "root", "n": N}, "two"] if RANK == 0 else [None, None]
    dist.broadcast_object_list(objs, src=0)
    if objs != [{"from": "root", "n": N}, "two"]:
        raise AssertionError(f"broadcast_object_list: {objs}")
    out = [None]
    dist.scatter_object_list(out, [f"to {r}" for r in range(N)] if RANK == 0 else None, src=0)
    if out != [f"to {RANK}"]:
        raise AssertionError(f"scatter_object_list: {out}")


def monitored_barrier():
    try:
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
    except (RuntimeError, ValueError) as e:
        if "only" in str(e) and "GLOO" in str(e).upper():
            raise Refused(str(e).splitlines()[0]) from None
        raise


CASES = [dtensor_redistribute, tensor_parallel, sequence_parallel]
CASES += [make_schedule_case(k, 1) for k in ("ScheduleGPipe", "Schedule1F1B")]
CASES += [make_schedule_case(k, 2) for k in ("ScheduleInterleaved1F1B", "ScheduleLoopedBFS",
                                              "ScheduleInterleavedZeroBubble", "ScheduleZBVZeroBubble")]
CASES += [fsdp2_with_tp, dcp_save_load, object_collectives, monitored_barrier]

only = os.environ.get("CFX_PARALLEL_CASES")
for c in CASES:
    if only and c.__name__ not in only.split(","):
        continue
    case(c)
    dist.barrier()
dist.destroy_process_group()
