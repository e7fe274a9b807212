"""One rank of the method x dtype matrix: every backend method on every dtype Conflux maps, on a
'conflux' default group and a Gloo group over the same ranks, in the same job, on the same tensors.

Inputs are exact by construction: reductions take small integers (their sums, products, averages
and PREMUL_SUM results are exact in every dtype, float8 included), data movement takes random bytes.
Every rank can rebuild every other rank's input, so each result is compared bitwise with a local
reference, and with Gloo's result on every form Gloo supports for the dtype (GLOO_FORMS, probed on
torch 2.13's Gloo: everything but float8, AVG on floats only). A form Gloo is expected to take but
refuses, or one that was never compared, fails the job: no refusal is swallowed."""
import datetime
import os
import sys
import traceback

import torch
import torch.distributed as dist

import torch_conflux  # noqa: F401

RANK, N = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2,
          torch.int8, torch.uint8, torch.int32, torch.int64, torch.bool]
FLOATS = {torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2}
SIZES = [0, 1, 7, 1031]
R = dist.ReduceOp
failures, stats = [], {"checks": 0, "vs_gloo": 0, "reference_only": 0}
REDUCING = ["all_reduce", "reduce", "reduce_scatter_tensor", "reduce_scatter(list)"]
MOVING = ["broadcast", "all_gather", "all_gather_into_tensor", "all_to_all_single", "all_to_all_single uneven",
          "all_to_all(list)", "gather", "scatter", "send/recv"]


def gloo_forms(dtype):
    """Every (form, op) Gloo takes for `dtype`: what each run must also compare with Gloo."""
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return set()
    ops = ["SUM", "PRODUCT", "MIN", "MAX"] + (["AVG"] if dtype in FLOATS else [])
    return {f"{form} {op}" for form in REDUCING for op in ops} | set(MOVING)


compared = {}  # dtype -> the (form, op) compared with Gloo


def same(a, b):
    a, b = a.contiguous(), b.contiguous()
    return a.shape == b.shape and torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def check(name, got, want, gloo=None, form=None):
    stats["checks"] += 1
    if gloo is not None and form is not None:
        compared.setdefault(got.dtype, set()).add(form)
    if not same(got, want):
        failures.append(f"{name}: got {got.flatten()[:8].tolist()} want {want.flatten()[:8].tolist()}")
    if gloo is not None and gloo.dtype == torch.bool:
        # Gloo adds bools as bytes (leaving 2, no valid bool, in the tensor); Conflux, as NCCL, makes
        # SUM a logical or. Compared after normalising Gloo's bytes to 0/1.
        gloo = gloo.view(torch.uint8).ne(0)
    if gloo is None:
        stats["reference_only"] += 1
    else:
        stats["vs_gloo"] += 1
        if not same(got, gloo):
            failures.append(f"{name}: differs from gloo")


def small(rank, n, dtype, kind="mixed"):
    """Rank `rank`'s reduction input: values in {0,1,2} ('mixed'), {0,N} ('avg') or {0,1} ('bool')."""
    i = torch.arange(n, dtype=torch.int64)
    if dtype == torch.bool or kind == "bool":
        v = (i + rank) % 2
    elif kind == "avg":
        v = N * ((i + rank) % 2)
    else:
        v = (i + rank) % 3
    return v.to(torch.float32).to(dtype) if dtype in FLOATS else v.to(dtype)


def reference(op, dtype, n, kind, factor=1.0):
    xs = torch.stack([small(r, n, dtype, kind).to(torch.float64) for r in range(N)]) if n else torch.zeros(N, 0, dtype=torch.float64)
    if op in (R.SUM, R.PREMUL_SUM):
        y = (xs * factor).sum(0) if dtype != torch.bool else xs.amax(0) if n else xs.sum(0)
    elif op == R.AVG:
        y = xs.sum(0) / N
    elif op == R.PRODUCT:
        y = xs.prod(0) if dtype != torch.bool else (xs.amin(0) if n else xs.prod(0))
    elif op == R.MIN:
        y = xs.amin(0) if n else xs.sum(0)
    else:
        y = xs.amax(0) if n else xs.sum(0)
    return y.to(torch.float32).to(dtype) if dtype in FLOATS else y.to(dtype)


def rand_bytes(seed, n, dtype):
    g = torch.Generator().manual_seed(seed)
    size = torch.empty(0, dtype=dtype).element_size()
    b = torch.randint(0, 256, (n * size,), dtype=torch.uint8, generator=g)
    if dtype == torch.bool:
        b = b & 1
    return b.view(dtype)


def on_gloo(form, dtype, fn):
    """Runs fn on the Gloo group where Gloo takes this form for the dtype (GLOO_FORMS); a refusal there
    fails the job. Returns whether it ran."""
    if form not in gloo_forms(dtype):
        return False
    fn()
    return True


def ops_for(dtype):
    ops = [(R.SUM, "mixed"), (R.PRODUCT, "mixed"), (R.MIN, "mixed"), (R.MAX, "mixed")]
    if dtype != torch.bool:
        ops.append((R.AVG, "avg"))
    if dtype in FLOATS:
        ops.append((dist._make_nccl_premul_sum(2.0), "bool"))
    return ops


def opname(op):
    return "PREMUL_SUM" if not isinstance(op, R.RedOpType) else str(op).split(".")[-1]


def reductions(dtype, gloo):
    for n in SIZES:
        for op, kind in ops_for(dtype):
            tag = f"{dtype} n={n} {opname(op)}"
            base = op if isinstance(op, R.RedOpType) else R.PREMUL_SUM
            factor = 2.0 if base == R.PREMUL_SUM else 1.0
            want = reference(base, dtype, n, kind, factor)
            x = small(RANK, n, dtype, kind)
            name = opname(op)
            t = x.clone()
            dist.all_reduce(t, op=op)
            g = x.clone()
            gok = on_gloo(f"all_reduce {name}", dtype, lambda: dist.all_reduce(g, op=op, group=gloo))
            check(f"all_reduce {tag}", t, want, g if gok else None, f"all_reduce {name}")
            # reduce to the last rank
            t, g = x.clone(), x.clone()
            dist.reduce(t, dst=N - 1, op=op)
            gok = on_gloo(f"reduce {name}", dtype, lambda: dist.reduce(g, dst=N - 1, op=op, group=gloo))
            if RANK == N - 1:
                check(f"reduce {tag}", t, want, g if gok else None, f"reduce {name}")
            # reduce_scatter_tensor and reduce_scatter (list): rank r's block of N*n elements
            full = torch.cat([small(RANK, n, dtype, kind) for _ in range(N)]) if n else x.clone()
            out, gout = torch.empty(n, dtype=dtype), torch.empty(n, dtype=dtype)
            dist.reduce_scatter_tensor(out, full, op=op)
            gok = on_gloo(f"reduce_scatter_tensor {name}", dtype,
                          lambda: dist.reduce_scatter_tensor(gout, full, op=op, group=gloo))
            check(f"reduce_scatter_tensor {tag}", out, want, gout if gok else None, f"reduce_scatter_tensor {name}")
            out2, gout2 = torch.empty(n, dtype=dtype), torch.empty(n, dtype=dtype)
            parts = [small(RANK, n, dtype, kind) for _ in range(N)]
            dist.reduce_scatter(out2, parts, op=op)
            gok = on_gloo(f"reduce_scatter(list) {name}", dtype,
                          lambda: dist.reduce_scatter(gout2, parts, op=op, group=gloo))
            check(f"reduce_scatter(list) {tag}", out2, want, gout2 if gok else None, f"reduce_scatter(list) {name}")
            # uneven (cfxReduceScatterv): rank p's block has n + p elements (reference only)
            out3 = torch.empty(n + RANK, dtype=dtype)
            dist.reduce_scatter(out3, [small(RANK, n + p, dtype, kind) for p in range(N)], op=op)
            check(f"reduce_scatter(list) uneven {tag}", out3, reference(base, dtype, n + RANK, kind, factor))
        # coalesced forms (the fast paths of _coalescing_manager)
        a, b = small(RANK, n, dtype), small(RANK, n + 3, dtype)
        with dist._coalescing_manager(device=torch.device("cpu")):
            dist.all_reduce(a)
            dist.all_reduce(b)
        check(f"all_reduce coalesced {dtype} n={n}", a, reference(R.SUM, dtype, n, "mixed"))
        check(f"all_reduce coalesced {dtype} n={n + 3}", b, reference(R.SUM, dtype, n + 3, "mixed"))
        outs = [torch.empty(n, dtype=dtype), torch.empty(n + 2, dtype=dtype)]
        with dist._coalescing_manager(device=torch.device("cpu")):
            dist.reduce_scatter_tensor(outs[0], torch.cat([small(RANK, n, dtype)] * N))
            dist.reduce_scatter_tensor(outs[1], torch.cat([small(RANK, n + 2, dtype)] * N))
        check(f"reduce_scatter_tensor coalesced {dtype} n={n}", outs[0], reference(R.SUM, dtype, n, "mixed"))
        check(f"reduce_scatter_tensor coalesced {dtype} n={n + 2}", outs[1], reference(R.SUM, dtype, n + 2, "mixed"))


def movement(dtype, gloo):
    for n in SIZES:
        seed = lambda r, k: 1000003 * r + 7919 * k + n  # noqa: E731
        tag = f"{dtype} n={n}"
        # broadcast from rank 1 % N
        root = 1 % N
        t = rand_bytes(seed(RANK, 1), n, dtype)
        g = t.clone()
        dist.broadcast(t, src=root)
        gok = on_gloo("broadcast", dtype, lambda: dist.broadcast(g, src=root, group=gloo))
        check(f"broadcast {tag}", t, rand_bytes(seed(root, 1), n, dtype), g if gok else None, "broadcast")
        # all_gather (list) and all_gather_into_tensor
        x = rand_bytes(seed(RANK, 2), n, dtype)
        want = [rand_bytes(seed(r, 2), n, dtype) for r in range(N)]
        outs = [torch.empty(n, dtype=dtype) for _ in range(N)]
        dist.all_gather(outs, x)
        gouts = [torch.empty(n, dtype=dtype) for _ in range(N)]
        gok = on_gloo("all_gather", dtype, lambda: dist.all_gather(gouts, x, group=gloo))
        for r in range(N):
            check(f"all_gather {tag} block {r}", outs[r], want[r], gouts[r] if gok else None, "all_gather")
        # uneven (cfxAllGatherv): rank r gives n + r elements (reference only)
        outs = [torch.empty(n + r, dtype=dtype) for r in range(N)]
        dist.all_gather(outs, rand_bytes(seed(RANK, 9), n + RANK, dtype))
        for r in range(N):
            check(f"all_gather uneven {tag} block {r}", outs[r], rand_bytes(seed(r, 9), n + r, dtype))
        flat, gflat = torch.empty(N * n, dtype=dtype), torch.empty(N * n, dtype=dtype)
        dist.all_gather_into_tensor(flat, x)
        gok = on_gloo("all_gather_into_tensor", dtype, lambda: dist.all_gather_into_tensor(gflat, x, group=gloo))
        check(f"all_gather_into_tensor {tag}", flat, torch.cat(want), gflat if gok else None, "all_gather_into_tensor")
        flats = [torch.empty(N * n, dtype=dtype), torch.empty(N * (n + 1), dtype=dtype)]
        y = rand_bytes(seed(RANK, 3), n + 1, dtype)
        with dist._coalescing_manager(device=torch.device("cpu")):
            dist.all_gather_into_tensor(flats[0], x)
            dist.all_gather_into_tensor(flats[1], y)
        check(f"all_gather_into_tensor coalesced {tag}", flats[0], torch.cat(want))
        check(f"all_gather_into_tensor coalesced {tag}+1", flats[1],
              torch.cat([rand_bytes(seed(r, 3), n + 1, dtype) for r in range(N)]))
        # all_gather_coalesced: lists[r][i] receives rank r's i-th input
        lists = [[torch.empty(n, dtype=dtype), torch.empty(n + 1, dtype=dtype)] for _ in range(N)]
        dist.all_gather_coalesced(lists, [x, y])
        for r in range(N):
            check(f"all_gather_coalesced {tag} rank {r} first", lists[r][0], want[r])
            check(f"all_gather_coalesced {tag} rank {r} second", lists[r][1], rand_bytes(seed(r, 3), n + 1, dtype))
        # all_to_all_single, equal blocks of n elements
        src = rand_bytes(seed(RANK, 4), N * n, dtype)
        out = torch.empty(N * n, dtype=dtype)
        dist.all_to_all_single(out, src)
        want = torch.cat([rand_bytes(seed(r, 4), N * n, dtype)[RANK * n:(RANK + 1) * n] for r in range(N)])
        gout = torch.empty(N * n, dtype=dtype)
        gok = on_gloo("all_to_all_single", dtype, lambda: dist.all_to_all_single(gout, src, group=gloo))
        check(f"all_to_all_single {tag}", out, want, gout if gok else None, "all_to_all_single")
        # uneven: rank r sends (r + 2p + n) % 3 rows of 3 elements to rank p
        rows = lambda r, p: (r + 2 * p + n) % 3  # noqa: E731
        ins = [rows(RANK, p) for p in range(N)]
        outs_split = [rows(p, RANK) for p in range(N)]
        src = rand_bytes(seed(RANK, 5), sum(ins) * 3, dtype).view(-1, 3)
        out = torch.empty(sum(outs_split), 3, dtype=dtype)
        dist.all_to_all_single(out, src, outs_split, ins)
        blocks = []
        for p in range(N):
            their = rand_bytes(seed(p, 5), sum(rows(p, q) for q in range(N)) * 3, dtype).view(-1, 3)
            start = sum(rows(p, q) for q in range(RANK))
            blocks.append(their[start:start + rows(p, RANK)])
        gout = torch.empty_like(out)
        gok = on_gloo("all_to_all_single uneven", dtype,
                      lambda: dist.all_to_all_single(gout, src, outs_split, ins, group=gloo))
        check(f"all_to_all_single uneven {tag}", out, torch.cat(blocks), gout if gok else None, "all_to_all_single uneven")
        # all_to_all of lists: equal sizes (Gloo's only form), then per-pair sizes (reference only)
        for uneven in (False, True):
            size = (lambda a, b: rows(a, b) + n) if uneven else (lambda a, b: n)  # noqa: E731
            ins = [rand_bytes(seed(RANK, 6 + p), size(RANK, p), dtype) for p in range(N)]
            outs = [torch.empty(size(p, RANK), dtype=dtype) for p in range(N)]
            gouts = [torch.empty(size(p, RANK), dtype=dtype) for p in range(N)]
            dist.all_to_all(outs, ins)
            gok = not uneven and on_gloo("all_to_all(list)", dtype, lambda: dist.all_to_all(gouts, ins, group=gloo))
            for p in range(N):
                check(f"all_to_all(list){' uneven' if uneven else ''} {tag} from {p}", outs[p],
                      rand_bytes(seed(p, 6 + RANK), size(p, RANK), dtype), gouts[p] if gok else None, "all_to_all(list)")
        # gather to rank 0, scatter from the last rank
        x = rand_bytes(seed(RANK, 7), n, dtype)
        gl = [torch.empty(n, dtype=dtype) for _ in range(N)] if RANK == 0 else None
        ggl = [torch.empty(n, dtype=dtype) for _ in range(N)] if RANK == 0 else None
        dist.gather(x, gl, dst=0)
        gok = on_gloo("gather", dtype, lambda: dist.gather(x, ggl, dst=0, group=gloo))
        if RANK == 0:
            for r in range(N):
                check(f"gather {tag} from {r}", gl[r], rand_bytes(seed(r, 7), n, dtype), ggl[r] if gok else None, "gather")
        sl = [rand_bytes(seed(p, 8), n, dtype) for p in range(N)] if RANK == N - 1 else None
        out, gout = torch.empty(n, dtype=dtype), torch.empty(n, dtype=dtype)
        dist.scatter(out, sl, src=N - 1)
        gok = on_gloo("scatter", dtype, lambda: dist.scatter(gout, sl, src=N - 1, group=gloo))
        check(f"scatter {tag}", out, rand_bytes(seed(RANK, 8), n, dtype), gout if gok else None, "scatter")
        # send/recv around the ring at every world size (even ranks send first; an odd ring's last
        # two ranks both send first, which the channels' room absorbs), on both backends; then
        # batch_isend_irecv both ways
        nxt, prv = (RANK + 1) % N, (RANK - 1) % N
        x = rand_bytes(seed(RANK, 9), n, dtype)

        def ring(got, group=None):
            if RANK % 2 == 0:
                dist.send(x, nxt, group=group)
                dist.recv(got, prv, group=group)
            else:
                dist.recv(got, prv, group=group)
                dist.send(x, nxt, group=group)
        got, ggot = torch.empty(n, dtype=dtype), torch.empty(n, dtype=dtype)
        ring(got)
        gok = N > 1 and on_gloo("send/recv", dtype, lambda: ring(ggot, gloo))
        check(f"send/recv {tag}", got, rand_bytes(seed(prv, 9), n, dtype), ggot if gok else None,
              "send/recv" if N > 1 else None)
        r1, r2 = torch.empty(n, dtype=dtype), torch.empty(n, dtype=dtype)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.irecv, r1, prv), dist.P2POp(dist.isend, x, nxt),
                                       dist.P2POp(dist.isend, x, prv), dist.P2POp(dist.irecv, r2, nxt)])
        for q in reqs:
            q.wait()
        check(f"batch_isend_irecv {tag} from prev", r1, rand_bytes(seed(prv, 9), n, dtype))
        check(f"batch_isend_irecv {tag} from next", r2, rand_bytes(seed(nxt, 9), n, dtype))
    dist.barrier()


def main():
    dist.init_process_group("conflux", timeout=datetime.timedelta(seconds=60))
    gloo = dist.new_group(backend="gloo")
    only = sys.argv[1:] or [str(d) for d in DTYPES]
    for dtype in DTYPES:
        if str(dtype) not in only:
            continue
        try:
            reductions(dtype, gloo)
            movement(dtype, gloo)
        except Exception:
            failures.append(f"{dtype}: {traceback.format_exc()}")
            break
    # Every form Gloo takes was compared with Gloo, for every dtype run (send/recv needs two ranks).
    for dtype in DTYPES:
        if str(dtype) not in only:
            continue
        want = gloo_forms(dtype) - ({"send/recv"} if N == 1 else set())
        # Rooted results are checked on their root alone.
        want -= {f for f in want if (f.startswith("reduce ") and RANK != N - 1) or (f == "gather" and RANK != 0)}
        missing = want - compared.get(dtype, set())
        if missing:
            failures.append(f"{dtype}: never compared with gloo: {sorted(missing)}")
    dist.destroy_process_group()
    print(f"rank {RANK}: {stats['checks']} checks, {stats['vs_gloo']} also against gloo "
          f"({sum(len(v) for v in compared.values())} forms x dtypes), "
          f"{stats['reference_only']} against the reference only; {len(failures)} failures")
    for f in failures[:40]:
        print("FAIL", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
