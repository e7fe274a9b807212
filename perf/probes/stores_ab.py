#!/usr/bin/env python3
"""Streaming against ordinary stores for large copies into user buffers (comm/src/ops/copy.h),
interleaved in one run: CFX_STREAMING_STORES=1 (streaming stores from 8 MiB: what Conflux did
before the chooser), auto (each rank times both and keeps the faster) and 0 (ordinary stores).
Prints the median time of each, in microseconds, and auto's speed-up over 1.

  perf/probes/stores_ab.py [--build build] [--rounds 5] [--size 128M] [--ranks 2,4]
"""
import argparse
import os
import statistics
import subprocess

CASES = [("all_reduce_perf", True), ("all_gather_perf", True), ("broadcast_perf", True),
         ("all_reduce_perf", False), ("all_gather_perf", False), ("broadcast_perf", False)]
MODES = ["1", "auto", "0"]


def run(build, ranks, binary, registered, size, mode):
    cmd = [f"{build}/tools/cfxrun", "-n", str(ranks), f"{build}/perf/{binary}", "-b", size, "-e", size,
           "-n", "5", "-w", "2", "-z", "1", "-c", "0"] + (["-R", "1"] if registered else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, CFX_STREAMING_STORES=mode)).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) > 6 and f[0].isdigit():
            return float(f[5])
    raise RuntimeError(f"no result from {' '.join(cmd)}:\n{out}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--size", default="128M")
    p.add_argument("--ranks", default="2,4")
    a = p.parse_args()
    print(f"# {a.size}, medians of {a.rounds} interleaved runs, time in us (-n 5 -w 2 -z 1)")
    print("| collective | ranks | buffers | streaming (1) | auto | ordinary (0) | auto speed-up over 1 |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for ranks in [int(r) for r in a.ranks.split(",")]:
        for binary, registered in CASES:
            times = {m: [] for m in MODES}
            for _ in range(a.rounds):
                for m in MODES:
                    times[m].append(run(a.build, ranks, binary, registered, a.size, m))
            med = {m: statistics.median(v) for m, v in times.items()}
            print(f"| {binary[:-5]} | {ranks} | {'registered' if registered else 'plain'} | {med['1']:.0f} | "
                  f"{med['auto']:.0f} | {med['0']:.0f} | {med['1'] / med['auto']:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
