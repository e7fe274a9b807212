#!/usr/bin/env python3
"""Run-to-run stability of large collectives (issue #31, section 2): the 3x cliff, made visible.

Runs one `*_perf` binary at one size as N separate jobs in a row (each job a fresh set of
processes, so address layout and page placement change from job to job as they do for users),
with and without CFX_BIND=core, and prints every job's bus bandwidth, the median, the slowest and
the slowest / median ratio (the target: >= 0.85). perf/membw runs before and after, so the
memory bound of the same minutes sits beside the figures. --probe also runs a short memcpy probe
(perf/membw, 64 MiB, pinned threads) just before every job and prints each job's bus bandwidth as
a fraction of it: a slow job with a slow probe is the machine's memory, one with a normal probe is
Conflux's. --peer mpi runs an Open MPI job of the same collective after every Conflux job (unbound,
`--bind-to none`) and prints its distribution beside Conflux's: a slow spell of the machine that
lasts one job shows in whichever job it hits, so a lone slow job in either column is the machine's
unless the other column never has one.

    perf/stability.py --colls all_reduce,broadcast --size 128M --runs 20 --ranks 2 [--peer mpi]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROW = re.compile(r"^\s*(\d+)\s+\d+\s+\S+\s+\S+\s+-?\d+\s+(\S+)\s+(\S+)\s+(\S+)")


def busbw(build, ranks, coll, size, iters, bind, peer=None):
    env = dict(os.environ)
    env.pop("CFX_BIND", None)
    if bind:
        env["CFX_BIND"] = bind
    args = ["-b", size, "-e", size, "-n", str(iters), "-w", "2", "-z", "1", "-c", "0"]
    if peer == "mpi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none",
               os.path.join(build, "perf", f"{coll}_perf_mpi")] + args
    else:
        cmd = [os.path.join(build, "tools", "cfxrun"), "-n", str(ranks), os.path.join(build, "perf", f"{coll}_perf")] + args
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr[-2000:]}")
    for line in out.stdout.splitlines():
        m = ROW.match(line)
        if m:
            return float(m.group(4))  # out-of-place busbw
    sys.exit(f"{' '.join(cmd)}: no result row in\n{out.stdout}")


def bound(build, ranks):
    exe = os.path.join(build, "perf", "membw")
    threads = min(ranks, len(os.sched_getaffinity(0)))
    out = subprocess.run([exe, "--size", "256", "--reps", "5", "--threads", str(threads), "--kernels", "memcpy,add,add_nt"],
                         capture_output=True, text=True, timeout=300).stdout
    rows = {m.group(1): float(m.group(2)) for m in re.finditer(rf"^\s+(\w+)\s+{threads}\s+([\d.]+)", out, flags=re.M)}
    return ", ".join(f"{k} {v:.2f}" for k, v in rows.items()) + f" GB/s payload on {threads} threads"


def memcpy_now(build, ranks):
    exe = os.path.join(build, "perf", "membw")
    threads = min(ranks, len(os.sched_getaffinity(0)))
    out = subprocess.run([exe, "--size", "64", "--reps", "3", "--threads", str(threads), "--kernels", "memcpy"],
                         capture_output=True, text=True, timeout=300).stdout
    m = re.search(rf"^\s+memcpy\s+{threads}\s+([\d.]+)", out, flags=re.M)
    return float(m.group(1))


def distribution(label, vals):
    med = statistics.median(vals)
    return (f"{label}: median {med:.2f} GB/s busbw, slowest {min(vals):.2f}, fastest {max(vals):.2f}, "
            f"slowest/median {min(vals) / med:.2f}; runs: " + " ".join(f"{v:.2f}" for v in vals))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--colls", default="all_reduce")
    ap.add_argument("--size", default="128M")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--binds", default="none,core", help="CFX_BIND values to run ('auto': unset)")
    ap.add_argument("--probe", action="store_true", help="a memcpy probe before every job")
    ap.add_argument("--peer", choices=["mpi"], help="an Open MPI job of the same collective after every job")
    a = ap.parse_args()
    print(f"# perf/stability.py {' '.join(sys.argv[1:])}")
    print(f"# membw before: {bound(a.build, a.ranks)}")
    for coll in a.colls.split(","):
        for bind in a.binds.split(","):
            vals, probes, peers = [], [], []
            for _ in range(a.runs):
                if a.probe:
                    probes.append(memcpy_now(a.build, a.ranks))
                vals.append(busbw(a.build, a.ranks, coll, a.size, a.iters, "" if bind == "auto" else bind))
                if a.peer:
                    peers.append(busbw(a.build, a.ranks, coll, a.size, a.iters, "", a.peer))
            print(distribution(f"{coll} {a.size} {a.ranks} ranks CFX_BIND={bind}", vals), flush=True)
            if peers:
                print(distribution(f"  {a.peer} (jobs in turn with the above, --bind-to none)", peers), flush=True)
            if probes:
                frac = [v / p for v, p in zip(vals, probes)]
                fmed = statistics.median(frac)
                print(f"  memcpy probe before each job (GB/s): " + " ".join(f"{p:.2f}" for p in probes))
                print(f"  busbw / probe: median {fmed:.3f}, slowest {min(frac):.3f} ({min(frac) / fmed:.2f} of the median); "
                      + " ".join(f"{f:.3f}" for f in frac), flush=True)
    print(f"# membw after: {bound(a.build, a.ranks)}")


if __name__ == "__main__":
    main()
