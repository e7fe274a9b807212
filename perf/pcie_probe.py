#!/usr/bin/env python3
"""Pinned host<->device copy bandwidth on GPU 0 (issue #32, section 1): host-to-device, device-to-host,
and both at once on two streams, from 1 MiB to 1 GiB; median of --reps timed copies each, GB/s of
payload per direction. Needs PyTorch with CUDA. Usage: perf/pcie_probe.py [--reps 5] [--max-mib 1024]"""
import argparse
import statistics

import torch


def timed(fn, reps):
    times = []
    for _ in range(reps + 1):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return statistics.median(times[1:])  # the first is a warm-up


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--max-mib", type=int, default=1024)
    a = ap.parse_args()
    print(f"# {torch.cuda.get_device_name(0)}, torch {torch.__version__}, pinned host memory, GB/s per direction")
    print("| size | H2D | D2H | both at once (each way) |")
    print("|---|---|---|---|")
    mib = 1
    up, down = torch.cuda.Stream(), torch.cuda.Stream()
    while mib <= a.max_mib:
        n = mib << 20
        host_in = torch.empty(n, dtype=torch.uint8, pin_memory=True)
        host_out = torch.empty(n, dtype=torch.uint8, pin_memory=True)
        dev_in = torch.empty(n, dtype=torch.uint8, device="cuda")
        dev_out = torch.empty(n, dtype=torch.uint8, device="cuda")
        h2d = timed(lambda: dev_in.copy_(host_in, non_blocking=True), a.reps)
        d2h = timed(lambda: host_out.copy_(dev_out, non_blocking=True), a.reps)

        def both():
            main_stream = torch.cuda.current_stream()
            up.wait_stream(main_stream)
            down.wait_stream(main_stream)
            with torch.cuda.stream(up):
                dev_in.copy_(host_in, non_blocking=True)
            with torch.cuda.stream(down):
                host_out.copy_(dev_out, non_blocking=True)
            main_stream.wait_stream(up)
            main_stream.wait_stream(down)
        bidir = timed(both, a.reps)
        print(f"| {mib} MiB | {n / h2d / 1e9:.1f} | {n / d2h / 1e9:.1f} | {n / bidir / 1e9:.1f} |", flush=True)
        del host_in, host_out, dev_in, dev_out
        mib *= 4


if __name__ == "__main__":
    main()
