#!/usr/bin/env python3
"""Nanoseconds per call of a tiny collective, from wall time, for A/B runs of builds side by side.

The *_perf binaries print times in microseconds with two decimals: at 0.15 us a step is 7%, too
coarse to see a change of a few percent. This runs each binary twice, with --iters N and with 1000
iterations, and divides the difference in wall time by the calls between (two per iteration: out
of place and in place; one where the binary has no in-place run: AlltoAllv, SendRecv), so start-up
and warm-up cancel. Rounds interleave the labels; each label prints the median of its rounds.

A label is NAME[:VAR=VALUE...]: `mpi...` runs Open MPI's binary under mpirun, any other name
Conflux's under cfxrun with the variables set (LD_LIBRARY_PATH=<dir> puts another build's
libconflux.so under the same binaries). Conflux runs with CFX_BIND=none, as perf/compare does.

    perf/percall.py --ranks 2 --coll broadcast --bytes 8 base:LD_LIBRARY_PATH=/tmp/base tip mpi
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
NO_IN_PLACE = {"alltoallv", "sendrecv"}  # perf/src/runner.cc: one timed loop, not two


def wall(build, label, ranks, coll, size, iters):
    name, *assignments = label.split(":")
    env = dict(os.environ)
    env.setdefault("CFX_BIND", "none")
    for a in assignments:
        key, value = a.split("=", 1)
        env[key] = value
    if name.startswith("mpi"):
        env["OMPI_ALLOW_RUN_AS_ROOT"] = env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
        cmd = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none", f"{build}/perf/{coll}_perf_mpi"]
    else:
        cmd = [f"{build}/tools/cfxrun", "-n", str(ranks), f"{build}/perf/{coll}_perf"]
    cmd += ["-b", str(size), "-e", str(size), "-n", str(iters), "-w", "100", "-c", "0", "-z", "1"]
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=600)
    return time.perf_counter() - start


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--coll", default="broadcast")
    p.add_argument("--bytes", default="8")
    p.add_argument("--iters", type=int, default=1000000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("labels", nargs="+")
    a = p.parse_args()
    base = 1000
    calls = (a.iters - base) * (1 if a.coll in NO_IN_PLACE else 2)
    results = {label: [] for label in a.labels}
    for _ in range(a.rounds):
        for label in a.labels:
            t = wall(a.build, label, a.ranks, a.coll, a.bytes, a.iters)
            t0 = wall(a.build, label, a.ranks, a.coll, a.bytes, base)
            results[label].append((t - t0) / calls * 1e9)
    print(f"# {a.coll}, {a.bytes} B, {a.ranks} ranks: ns per call, median of {a.rounds} rounds")
    for label, v in results.items():
        print(f"{label:40s} {statistics.median(v):8.1f}   rounds: {' '.join(f'{x:.0f}' for x in v)}")


if __name__ == "__main__":
    main()
