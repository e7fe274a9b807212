#!/usr/bin/env python3
"""The AllReduce scaling model of docs/scaling.md: predicted time and bus bandwidth of Conflux's
hierarchical AllReduce for H hosts x L ranks with ring, double binary tree and recursive
halving-doubling between hosts.

  docs/scaling_model.py                          # the table in docs/scaling.md (200 Gbit/s, 8 ranks)
  docs/scaling_model.py --gbps 2 --alpha-us 60 --ranks 1 --hosts 2,3,4 --sizes 16M,64M
"""
import argparse
import math


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def local_time(S, L, M):
    # Reduce-scatter then all-gather through shared memory: each moves (L-1)/L of the buffer
    # through every rank's memory at about M bytes/s.
    return 0.0 if L == 1 else 2 * (L - 1) / L * S / M


def inter_time(algo, S, H, alpha, B):
    # Every local rank handles S/L bytes with its peers on other hosts; the L of them share the
    # host's link (B bytes/s), so in aggregate each host moves the traffic of one S-byte allreduce.
    if H == 1:
        return 0.0
    lg = math.ceil(math.log2(H))
    p = 1 << int(math.floor(math.log2(H)))
    if algo == "ring":
        return 2 * (H - 1) * alpha + 2 * (H - 1) / H * S / B
    if algo == "tree":  # two trees, half the data each, store-and-forward (not pipelined)
        return 2 * lg * alpha + 2 * lg * (S / 2) / B
    if algo == "rhd":
        t = 2 * math.log2(p) * alpha + 2 * (p - 1) / p * S / B
        if p != H:
            t += 2 * alpha + 2 * S / B  # fold the H - p extra hosts in and out
        return t
    raise ValueError(algo)


def busbw(S, T, n):
    return S / T * 2 * (n - 1) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gbps", type=float, default=200.0, help="link rate per host, Gbit/s")
    ap.add_argument("--alpha-us", type=float, default=5.0, help="per-message latency between hosts, us")
    ap.add_argument("--local-gbs", type=float, default=40.0, help="shared-memory reduce/copy rate, GB/s")
    ap.add_argument("--ranks", type=int, default=8, help="ranks per host")
    ap.add_argument("--hosts", default="2,4,8,16,32,64,128,256,512,1024")
    ap.add_argument("--sizes", default="1M,256M")
    a = ap.parse_args()
    B = a.gbps * 1e9 / 8
    alpha = a.alpha_us * 1e-6
    M = a.local_gbs * 1e9
    L = a.ranks
    for S in [parse_size(s) for s in a.sizes.split(",")]:
        print(f"\nAllReduce of {S >> 20} MiB, {L} ranks per host, {a.gbps:g} Gbit/s per host, "
              f"alpha {a.alpha_us:g} us, shared memory {a.local_gbs:g} GB/s; time in ms, busbw in GB/s\n")
        print("| hosts | ranks | ring time | ring busbw | tree time | tree busbw | rhd time | rhd busbw | best |")
        print("|---|---|---|---|---|---|---|---|---|")
        for H in [int(h) for h in a.hosts.split(",")]:
            n = H * L
            row = [str(H), str(n)]
            best, bestT = None, None
            for algo in ("ring", "tree", "rhd"):
                T = local_time(S, L, M) + inter_time(algo, S, H, alpha, B)
                row += [f"{T * 1e3:.3f}", f"{busbw(S, T, n) / 1e9:.2f}"]
                if bestT is None or T < bestT:
                    best, bestT = algo, T
            row.append(best)
            print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
