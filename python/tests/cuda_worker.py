"""One rank of the CUDA-tensor checks (run by gpu_torch.py on a machine with a GPU; every rank on
cuda:0, as several ranks may share one GPU on Conflux's staged path).

Each collective runs on CUDA tensors and, through the same process group, on CPU copies of them;
the host path is checked exactly elsewhere (collectives_worker.py), so the two must agree bitwise.
Inputs are small integers, exact in every dtype. Then: stream order with no host wait (a late
producer kernel, the collective, a consumer), the forms that run on host copies, DDP on CUDA
against one process, and a dead peer releasing the survivors' streams."""
import datetime
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import torch_conflux  # noqa: F401
from models import BATCH, batch, loss_fn, make_model, max_relative

RANK, N = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
DEV = torch.device("cuda", 0)
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2,
          torch.int8, torch.uint8, torch.int32, torch.int64, torch.bool]
FLOATS = {torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2}
OPS = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX, dist.ReduceOp.AVG]
SIZES = [0, 1, 7, 1031, (1 << 20) + 3]
failures = []
checks = 0


def same(a, b):
    a, b = a.detach().cpu().contiguous(), b.detach().cpu().contiguous()
    return a.shape == b.shape and torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def check(name, got, want):
    global checks
    checks += 1
    if not same(got, want):
        failures.append(f"{name}: got {got.flatten()[:6].cpu().tolist()} want {want.flatten()[:6].cpu().tolist()}")


def small(rank, n, dtype, seed=0):
    v = (torch.arange(n, dtype=torch.int64) + rank + seed) % 3
    if dtype == torch.bool:
        return (v % 2).bool()
    return v.to(torch.float32).to(dtype) if dtype in FLOATS else v.to(dtype)


def on_both(fn, *host):
    """fn(*tensors) on CUDA copies and on the CPU tensors; returns (cuda results, cpu results)."""
    dev = [t.to(DEV) for t in host]
    fn(*dev)
    fn(*host)
    torch.cuda.current_stream().synchronize()
    return dev, host


def reductions():
    for dtype in DTYPES:
        for op in OPS:
            if dtype == torch.bool and op == dist.ReduceOp.AVG:
                continue
            if dtype not in FLOATS and op == dist.ReduceOp.AVG:
                continue
            for n in SIZES:
                name = f"{dtype} {op} n={n}"
                d, h = on_both(lambda t: dist.all_reduce(t, op=op), small(RANK, n, dtype))
                check("all_reduce " + name, d[0], h[0])
                if n > 1031:
                    continue
                d, h = on_both(lambda t: dist.reduce(t, dst=N - 1, op=op), small(RANK, n, dtype))
                if RANK == N - 1:
                    check("reduce " + name, d[0], h[0])
                out = torch.empty(n, dtype=dtype)
                d, h = on_both(lambda o, i: dist.reduce_scatter_tensor(o, i, op=op), out, small(RANK, n * N, dtype))
                check("reduce_scatter_tensor " + name, d[0], h[0])


def data_movement():
    for dtype in (torch.float32, torch.bfloat16, torch.uint8, torch.int64):
        for n in SIZES[:4]:
            x = small(RANK, n, dtype, seed=1)
            d, h = on_both(lambda t: dist.broadcast(t, src=N - 1), x.clone())
            check(f"broadcast {dtype} n={n}", d[0], h[0])
            d, h = on_both(lambda o, i: dist.all_gather_into_tensor(o, i), torch.empty(n * N, dtype=dtype), x)
            check(f"all_gather_into_tensor {dtype} n={n}", d[0], h[0])
            # In place: this rank's input is its own block of the output.
            out = torch.zeros(n * N, dtype=dtype).to(DEV)
            out[RANK * n:(RANK + 1) * n] = x.to(DEV)
            dist.all_gather_into_tensor(out, out[RANK * n:(RANK + 1) * n])
            check(f"all_gather_into_tensor in place {dtype} n={n}", out, h[0])
            lists = [torch.empty(n, dtype=dtype, device=DEV) for _ in range(N)]  # separate allocations
            dist.all_gather(lists, x.to(DEV))
            check(f"all_gather list {dtype} n={n}", torch.cat([t.cpu() for t in lists]), h[0])
            d, h = on_both(lambda o, i: dist.all_to_all_single(o, i), torch.empty(n * N, dtype=dtype),
                           small(RANK, n * N, dtype, seed=2))
            check(f"all_to_all_single {dtype} n={n}", d[0], h[0])


def host_copy_forms():
    # Uneven all_to_all_single, gather, scatter and batch_isend_irecv run on host copies.
    splits = [(RANK + p) % 3 + 1 for p in range(N)]  # rows this rank sends to p
    recv = [(p + RANK) % 3 + 1 for p in range(N)]
    x = small(RANK, sum(splits), torch.float32, seed=3)
    d, h = on_both(lambda o, i: dist.all_to_all_single(o, i, recv, splits), torch.empty(sum(recv)), x)
    check("all_to_all_single uneven", d[0], h[0])
    x = small(RANK, 5, torch.int32, seed=4)
    got = [torch.empty(5, dtype=torch.int32, device=DEV) for _ in range(N)] if RANK == 0 else None
    dist.gather(x.to(DEV), got, dst=0)
    if RANK == 0:
        check("gather", torch.cat([t.cpu() for t in got]), torch.cat([small(r, 5, torch.int32, seed=4) for r in range(N)]))
    out = torch.empty(5, dtype=torch.int32, device=DEV)
    dist.scatter(out, [small(r, 5, torch.int32, seed=5).to(DEV) for r in range(N)] if RANK == 0 else None, src=0)
    check("scatter", out, small(RANK, 5, torch.int32, seed=5))
    if N > 1:
        right, left = (RANK + 1) % N, (RANK - 1) % N
        got = torch.empty(1031, device=DEV)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, small(RANK, 1031, torch.float32, 6).to(DEV), right),
                                       dist.P2POp(dist.irecv, got, left)])
        for r in reqs:
            r.wait()
        check("batch_isend_irecv ring", got, small(left, 1031, torch.float32, 6))
        # Plain send/recv on the staged path: even ranks send first.
        got = torch.empty(1031, device=DEV)
        mine = small(RANK, 1031, torch.float32, 7).to(DEV)
        if RANK % 2 == 0:
            dist.send(mine, right)
            dist.recv(got, left)
        else:
            dist.recv(got, left)
            dist.send(mine, right)
        check("send/recv ring", got, small(left, 1031, torch.float32, 7))


def stream_order():
    # A late producer (the GPU sleeps, then writes), the collective and a consumer, all queued on the
    # current stream with no host wait in between; the host waits once, at the end.
    n = 1 << 20
    x = torch.empty(n, device=DEV)
    torch.cuda._sleep(50_000_000)
    x.fill_(RANK + 1)
    work = dist.all_reduce(x, async_op=True)
    y = x * 2
    work.wait()  # orders the current stream after the collective, without blocking the host
    torch.cuda.current_stream().synchronize()
    check("stream order", y, torch.full((n,), float(N * (N + 1))))
    fut = dist.all_reduce(torch.ones(3, device=DEV), async_op=True).get_future()
    check("future value", fut.wait()[0], torch.full((3,), float(N)))


def ddp():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = DDP(make_model(seed=RANK).to(DEV), device_ids=[0], bucket_cap_mb=0.05)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    share = BATCH // N
    for step in range(3):
        x, y = (t.to(DEV) for t in batch(step))
        opt.zero_grad()
        loss_fn(model, x[RANK * share:(RANK + 1) * share], y[RANK * share:(RANK + 1) * share]).backward()
        opt.step()
    ref = make_model().to(DEV)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    for step in range(3):
        x, y = (t.to(DEV) for t in batch(step))
        ref_opt.zero_grad()
        loss_fn(ref, x, y).backward()
        ref_opt.step()
    err = max_relative([p.detach() for p in model.parameters()], [p.detach() for p in ref.parameters()])
    if err > 1e-4:
        failures.append(f"DDP on CUDA differs from one process by {err:.2e} relative")


def dead_peer():
    # The last rank exits without a word; the others' streams must be released, and their Work
    # must fail, within the timeout.
    if RANK == N - 1:
        os._exit(0)
    start = time.monotonic()
    x = torch.ones(1 << 20, device=DEV)
    work = dist.all_reduce(x, async_op=True)
    torch.cuda.current_stream().synchronize()  # returns: the stream was released
    try:
        work.wait()
        failed = False
        dist.all_reduce(x)  # the next call fails with the recorded error at once
    except Exception as e:  # noqa: BLE001
        failed = True
        print(f"rank {RANK}: dead peer reported: {str(e)[:200]}")
    if not failed:
        failures.append("a dead peer was not reported")
    if time.monotonic() - start > 30:
        failures.append(f"the dead peer took {time.monotonic() - start:.0f} s to report")
    print("OK dead peer released the stream", flush=True)
    os._exit(1 if failures else 0)


def main():
    mode = sys.argv[1]
    torch.cuda.set_device(DEV)
    dist.init_process_group("conflux", timeout=datetime.timedelta(seconds=10))
    try:
        {"collectives": lambda: (reductions(), data_movement(), host_copy_forms(), stream_order()),
         "ddp": ddp, "dead_peer": dead_peer}[mode]()
    except Exception:  # noqa: BLE001
        failures.append(traceback.format_exc())
    if failures:
        print(f"rank {RANK}: {len(failures)} of {checks} checks failed", *failures[:20], sep="\n")
        sys.exit(1)
    print(f"OK rank {RANK}: {checks} checks on CUDA tensors")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
