#!/usr/bin/env python3
"""torch.distributed on Conflux beside Gloo, in one job: dist.all_reduce latency and bus bandwidth
from 8 B to 256 MiB, the DDP step time of a small GPT split into compute and exposed
communication, and an FSDP2 step of that GPT with its communication buffers from torch or from
Conflux's registered memory (allocate_tensor).

    python3 perf/torch_bench.py --ranks 2,4 --repeat 3 --out perf/RESULTS-torch.md

Each rank count is one torchrun job in which every rank holds a 'conflux' default group and a
'gloo' group over the same ranks; backends alternate size by size (and step by step), so machine
noise hits both alike. A time is the slowest rank's mean over the iterations; figures are medians
over --repeat rounds. busbw = 2(n-1)/n x bytes / time, as nccl-tests. With --cfx-perf, the C API's
own all_reduce_perf (-z 0: the stream path; -z 1: blocking) is run under cfxrun for the 8 B
comparison. OMP_NUM_THREADS=1 in every rank.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

MiB = 1 << 20


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def human(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


# ---- worker (one rank, under torchrun) --------------------------------------------------------

def worker(args):
    import torch
    import torch.distributed as dist
    import torch_conflux  # noqa: F401
    from torch import nn

    torch.set_num_threads(1)
    dist.init_process_group("conflux")
    rank, n = dist.get_rank(), dist.get_world_size()
    groups = {"conflux": dist.group.WORLD, "gloo": dist.new_group(backend="gloo")}

    def slowest(seconds):
        t = torch.tensor([seconds], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=groups["gloo"])
        return t.item()

    def time_allreduce(group, t, iters):
        dist.barrier(group=group)
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t, group=group)
        return slowest((time.perf_counter() - start) / iters)

    results = {"allreduce": {}, "ddp": {}, "floor": []}
    sizes, size = [], 8
    while size <= args.max_bytes:
        sizes.append(size)
        size *= 4
    if sizes[-1] != args.max_bytes:
        sizes.append(args.max_bytes)  # 8 B x 4^k passes 128 MiB; the largest asked for is measured too
    for size in sizes:
        t = torch.ones(size // 4, dtype=torch.float32)
        iters = max(3, min(2000, int(2e8 // max(size, 1 << 16) // 8)))
        for backend, group in groups.items():
            time_allreduce(group, t, max(1, iters // 10))  # warm-up
        for _ in range(args.repeat):
            for backend, group in groups.items():
                results["allreduce"].setdefault(backend, {}).setdefault(size, []).append(
                    time_allreduce(group, t, iters))

    # torch's own cost around a backend: torch's "fake" backend (torch.testing) is a C++ backend
    # whose collectives do nothing and return a finished Work, so its 8 B all_reduce is what
    # Python, the dispatcher and c10d take before any backend runs.
    try:
        import torch.testing._internal.distributed.fake_pg  # noqa: F401  (registers "fake")
        fake = dist.new_group(backend="fake")
        t = torch.ones(2, dtype=torch.float32)
        time_allreduce(fake, t, 200)
        for _ in range(args.repeat):
            results["floor"].append(time_allreduce(fake, t, 2000))
    except (ImportError, RuntimeError, ValueError) as e:
        print(f"torch_bench: no fake backend ({e}); the floor is not measured", file=sys.stderr)

    # DDP: a small GPT (examples/torch_ddp.py's model, larger), SGD.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
    from torch_ddp import TinyGPT

    torch.manual_seed(0)
    vocab, d, layers, heads, seq, batch = 512, 256, 4, 4, 64, 8

    def GPT():  # noqa: N802
        return TinyGPT(vocab, d, layers, heads, seq)

    params = sum(p.numel() for p in GPT().parameters())
    x = torch.randint(0, vocab, (batch, seq))
    y = torch.randint(0, vocab, (batch, seq))

    def step_time(model, steps):
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        times = []
        for i in range(steps + 3):
            dist.barrier(group=groups["gloo"])
            start = time.perf_counter()
            opt.zero_grad()
            nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
            opt.step()
            if i >= 3:
                times.append(slowest(time.perf_counter() - start))
        return statistics.median(times)

    models = {"compute only": GPT()}
    for backend, group in groups.items():
        models[backend] = nn.parallel.DistributedDataParallel(GPT(), process_group=group)
    for _ in range(args.repeat):
        for name, model in models.items():
            results["ddp"].setdefault(name, []).append(step_time(model, args.steps))
    results["ddp_params"] = params

    # FSDP2: the same GPT, each block and the root sharded over the conflux group, its all-gather
    # and reduce-scatter buffers from torch's allocator or from Conflux's registered memory
    # (set_allocate_memory_from_process_group_for_comm: the backend's allocate_tensor).
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (n,))

    def fsdp_gpt(registered):
        torch.manual_seed(0)
        m = GPT()
        for block in m.blocks.layers:
            fully_shard(block, mesh=mesh)
        fully_shard(m, mesh=mesh)
        for module in [*m.blocks.layers, m]:
            module.set_allocate_memory_from_process_group_for_comm(registered)
        return m

    fsdp = {"plain buffers": fsdp_gpt(False), "registered buffers": fsdp_gpt(True)}
    for _ in range(args.repeat):
        for name, model in fsdp.items():
            results.setdefault("fsdp", {}).setdefault(name, []).append(step_time(model, args.steps))
    dist.destroy_process_group()
    if rank == 0:
        with open(args.result, "w") as f:
            json.dump(results, f)


# ---- driver -----------------------------------------------------------------------------------

def c_api_latency(perf_dir, ranks):
    """8 B all_reduce_perf time (us) with -z 0 (stream) and -z 1 (blocking), under cfxrun."""
    out = {}
    for z in (0, 1):
        cmd = [os.path.join(perf_dir, "..", "tools", "cfxrun"), "-n", str(ranks),
               os.path.join(perf_dir, "all_reduce_perf"), "-b", "8", "-e", "8", "-n", "2000", "-w", "200",
               "-z", str(z)]
        text = subprocess.run(cmd, capture_output=True, text=True, check=True,
                              env=dict(os.environ, OMP_NUM_THREADS="1")).stdout
        row = [line.split() for line in text.splitlines() if line.split()[:1] == ["8"]][0]
        out[z] = float(row[5])
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", default="2,4")
    p.add_argument("--max", default="256M", help="largest all_reduce (bytes, K/M/G suffixes)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--steps", type=int, default=10, help="DDP steps timed per round")
    p.add_argument("--cfx-perf", default="", help="build/perf: also run the C API's all_reduce_perf at 8 B")
    p.add_argument("--out", default="", help="write the tables (markdown) here too")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.max_bytes = parse_size(args.max)
    if args.worker:
        return worker(argparse.Namespace(**json.loads(os.environ["CFX_TORCH_BENCH"])))

    lines = [f"Command: `python3 perf/torch_bench.py {' '.join(sys.argv[1:])}`", ""]
    for ranks in [int(r) for r in args.ranks.split(",")]:
        result = f"/tmp/cfx-torch-bench-{os.getpid()}-{ranks}.json"
        # The worker's settings travel in the environment: torchrun's parser would take --max as its own.
        settings = json.dumps({"result": result, "max_bytes": args.max_bytes, "repeat": args.repeat,
                               "steps": args.steps})
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}",
               os.path.abspath(__file__), "--worker"]
        subprocess.run(cmd, check=True, env=dict(os.environ, OMP_NUM_THREADS="1", CFX_TORCH_BENCH=settings))
        with open(result) as f:
            r = json.load(f)
        os.unlink(result)
        ar = r["allreduce"]
        lines += [f"### {ranks} ranks: dist.all_reduce, float32 sum (medians of {args.repeat})", "",
                  "| size | conflux time (us) | gloo time (us) | conflux busbw (GB/s) | gloo busbw (GB/s) | conflux / gloo |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for size in sorted(ar["conflux"], key=int):
            tc, tg = statistics.median(ar["conflux"][size]), statistics.median(ar["gloo"][size])
            bus = 2 * (ranks - 1) / ranks * int(size)
            lines.append(f"| {human(int(size))} | {tc * 1e6:.1f} | {tg * 1e6:.1f} | {bus / tc / 1e9:.2f} | "
                         f"{bus / tg / 1e9:.2f} | {tg / tc:.2f}x |")
        if args.cfx_perf:
            c = c_api_latency(args.cfx_perf, ranks)
            t8 = statistics.median(ar["conflux"]["8"]) * 1e6
            lines += ["", f"8 B: dist.all_reduce on conflux {t8:.1f} us; the C API's all_reduce_perf "
                      f"{c[0]:.2f} us with -z 0 (stream), {c[1]:.2f} us with -z 1 (blocking): "
                      f"{t8 / c[0]:.1f}x the stream path."]
        if r.get("floor"):
            floor = statistics.median(r["floor"]) * 1e6
            t8 = statistics.median(ar["conflux"]["8"]) * 1e6
            lines += ["", f"8 B floor: dist.all_reduce on torch's fake backend (no communication, a finished "
                      f"Work) {floor:.1f} us in the same job: conflux adds {t8 - floor:.1f} us to torch's own cost."]
        ddp = {k: statistics.median(v) * 1e3 for k, v in r["ddp"].items()}
        lines += ["", f"### {ranks} ranks: DDP step of a {r['ddp_params'] / 1e6:.1f}M-parameter GPT "
                  f"(medians of {args.repeat} rounds of {args.steps} steps)", "",
                  "| | step (ms) | compute (ms) | exposed communication (ms) |", "|---|---:|---:|---:|"]
        for name in ("conflux", "gloo"):
            lines.append(f"| {name} | {ddp[name]:.1f} | {ddp['compute only']:.1f} | "
                         f"{ddp[name] - ddp['compute only']:.1f} |")
        if r.get("fsdp"):
            fs = {k: statistics.median(v) * 1e3 for k, v in r["fsdp"].items()}
            lines += ["", f"### {ranks} ranks: FSDP2 step of the same GPT on conflux, communication buffers "
                      f"from torch or from Conflux's registered memory (medians of {args.repeat} rounds of "
                      f"{args.steps} steps)", "", "| buffers | step (ms) |", "|---|---:|"]
            for name, ms in fs.items():
                lines.append(f"| {name} | {ms:.1f} |")
            lines.append(f"| registered / plain | {fs['registered buffers'] / fs['plain buffers']:.2f}x |")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
