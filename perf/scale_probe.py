#!/usr/bin/env python3
"""Init time, sockets and file descriptors per rank against the number of ranks (issue #35): runs
tests/scale_test's Scale.InitEveryCollectiveDestroy in network-namespace hosts (tests/netns/hosts.sh,
root) for each layout, --repeat times, and prints a markdown table of medians. Each run prints
one SCALE line from rank 0 (tests/scale_test.cc).

    perf/scale_probe.py [--build build] [--layouts 2x2,4x2,8x2,16x2,32x2,16x4] [--repeat 3] [--net tcp]
                        [--runtime-connect]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINE = re.compile(r"SCALE ranks (\d+) hosts (\d+): init (\d+) ms \(slowest rank\), sockets per rank (\d+) max "
                  r"([\d.]+) mean, after the hierarchical collectives (\d+) max ([\d.]+) mean, after AlltoAll and "
                  r"Send/Recv (\d+) max ([\d.]+) mean, descriptors per rank (\d+) max; collectives ([\d.]+) s; "
                  r"destroy (\d+) ms")


def run(build, hosts, per, net, lazy):
    layout = ",".join([str(per)] * hosts)
    cmd = [os.path.join(ROOT, "tests", "netns", "hosts.sh"), "--layout", layout, "--", "env", f"CFX_NET={net}", f"CFX_RUNTIME_CONNECT={int(lazy)}",
           "UCX_TLS=tcp,self", os.path.join(build, "tests", "scale_test"),
           "--gtest_filter=Scale.InitEveryCollectiveDestroy"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900).stdout
    m = LINE.search(out)
    if not m:
        sys.exit(f"no SCALE line from {layout}:\n{out[-3000:]}")
    return [float(x) for x in m.groups()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--layouts", default="2x2,4x2,8x2,16x2,32x2,16x4")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--net", default="tcp")
    ap.add_argument("--runtime-connect", action="store_true", help="CFX_RUNTIME_CONNECT=1")
    a = ap.parse_args()
    flag = " --runtime-connect" if a.runtime_connect else ""
    print(f"Command: `perf/scale_probe.py --layouts {a.layouts} --repeat {a.repeat} --net {a.net}{flag}` "
          f"(medians of {a.repeat} runs)\n")
    print("| hosts x ranks | ranks | init, slowest rank (ms) | sockets after init, max / mean | after ring, tree, rhd "
          "| after AlltoAll, Send/Recv | descriptors, max | every collective up to 1 MiB (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for shape in a.layouts.split(","):
        hosts, per = (int(x) for x in shape.split("x"))
        runs = [run(a.build, hosts, per, a.net, a.runtime_connect) for _ in range(a.repeat)]
        med = [statistics.median(r[i] for r in runs) for i in range(len(runs[0]))]
        print(f"| {hosts} x {per} | {int(med[0])} | {med[2]:.0f} | {med[3]:.0f} / {med[4]:.1f} | {med[5]:.0f} / "
              f"{med[6]:.1f} | {med[7]:.0f} / {med[8]:.1f} | {med[9]:.0f} | {med[10]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
