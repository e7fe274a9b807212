#!/usr/bin/env python3
"""Where an 8 B dist.all_reduce's time goes when ranks outnumber the CPUs (issue #31, section 4).

Times `dist.all_reduce` of two floats on the conflux backend, or on torch's `fake` backend (a C++
backend that does nothing and returns a finished Work) with --fake, and reports per call, averaged
over the ranks: the wall time, the calling thread's CPU time, and its voluntary and involuntary
context switches (getrusage of the thread). Run it under torchrun:

  PYTHONPATH=build/python/lib OMP_NUM_THREADS=1 python3 -m torch.distributed.run --standalone \\
      --nproc-per-node=4 perf/probes/torch_call_cost.py [--fake] [--calls 5000]
"""
import argparse
import importlib
import resource
import time

import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fake", action="store_true", help="time torch's fake backend instead of conflux")
    p.add_argument("--calls", type=int, default=5000)
    a = p.parse_args()
    import torch_conflux  # noqa: F401  (registers "conflux")
    dist.init_process_group("conflux")
    group = None
    if a.fake:
        importlib.import_module("torch.testing._internal.distributed.fake_pg")  # registers "fake"
        group = dist.new_group(backend="fake")
    t = torch.ones(2)
    for _ in range(300):
        dist.all_reduce(t, group=group)
    dist.barrier()
    r0 = resource.getrusage(resource.RUSAGE_THREAD)
    c0 = time.thread_time()
    t0 = time.perf_counter()
    for _ in range(a.calls):
        dist.all_reduce(t, group=group)
    wall = (time.perf_counter() - t0) / a.calls * 1e6
    cpu = (time.thread_time() - c0) / a.calls * 1e6
    r1 = resource.getrusage(resource.RUSAGE_THREAD)
    vol = (r1.ru_nvcsw - r0.ru_nvcsw) / a.calls
    invol = (r1.ru_nivcsw - r0.ru_nivcsw) / a.calls
    sums = torch.tensor([wall, cpu, vol, invol], dtype=torch.float64)
    dist.all_reduce(sums)
    sums /= dist.get_world_size()
    if dist.get_rank() == 0:
        print(f"{'fake' if a.fake else 'conflux'}, {dist.get_world_size()} ranks: {sums[0]:.1f} us per call, "
              f"calling thread's CPU {sums[1]:.1f} us, context switches {sums[2]:.2f} voluntary "
              f"+ {sums[3]:.2f} involuntary")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
