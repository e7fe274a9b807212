#!/usr/bin/env python3
"""The scaling model of docs/scaling.md: predicted time and bus bandwidth of Conflux's hierarchical
AllReduce for H hosts x L ranks with ring, double binary tree and recursive halving-doubling between
hosts, the algorithm CFX_ALGO=auto picks (comm/src/hier/net_tuning.cc), and init time and sockets
per rank (connections on demand, the bootstrap over an 8-ary tree).

  docs/scaling_model.py                          # the tables in docs/scaling.md and the README
  docs/scaling_model.py --check                  # the model against tests/netns measurements
  docs/scaling_model.py --gbps 2 --alpha-us 60 --ranks 1 --hosts 2,3,4 --sizes 16M,64M

Terms (docs/scaling.md): per-message latency alpha and per-message software cost gamma; the host
link B; shared memory M for the reduce-scatter and all-gather inside a host; between hosts, the CPU
cost of every byte a rank sends or receives (kernel TCP copies it once each way, at C bytes/s per
core) and of reducing what it receives (R bytes/s). The link and the kernel's copies overlap, so
the slower of the two counts; the ring's and halving-doubling's reductions do not (each step's
block is reduced before the next step sends it), so they add. When all ranks of all hosts share a
few cores (network namespaces on one machine) their CPU work adds up on those cores. A link shaped
by a token bucket (tbf, the namespaces' --rate) hides up to burst / rate of each step's gap.
CFX_ALGO=auto keeps the ring unless another algorithm is predicted to take at most 0.9 of its time.
"""
import argparse
import math
from dataclasses import dataclass, replace


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


@dataclass
class Machine:
    gbps: float = 200.0        # host link, Gbit/s
    alpha: float = 5e-6        # s per message between hosts
    gamma: float = 2e-6        # s of software per message a rank handles
    local: float = 40e9        # shared-memory reduce/copy rate inside a host, bytes/s
    copy: float = 1.9e9        # kernel TCP copy rate, bytes/s per core (each byte sent and received)
    reduce: float = 10e9       # reduction rate between hosts, bytes/s per core
    shared_cores: int = 0      # >0: every rank of every host shares this many cores (emulation)
    link_efficiency: float = 1.0  # payload / line rate (TCP/IP framing, shaping)
    burst: float = 0.0         # bytes a shaped link passes at once after idling (tbf's bucket); 0: none

    @property
    def B(self):
        return self.gbps * 1e9 / 8 * self.link_efficiency


def local_time(S, L, m):
    # Reduce-scatter then all-gather through shared memory: each moves (L-1)/L of the buffer.
    return 0.0 if L == 1 else 2 * (L - 1) / L * S / m.local


def inter_terms(algo, S, H):
    """(latency steps, bytes over each host's link, messages a rank handles, reduced fraction)."""
    lg = math.ceil(math.log2(H))
    p = 1 << int(math.floor(math.log2(H)))
    if algo == "ring":
        return 2 * (H - 1), 2 * (H - 1) / H * S, 4 * (H - 1), (H - 1) / H
    if algo == "tree":  # two trees, half the data each, store-and-forward (not pipelined)
        return 2 * lg, 2 * lg * (S / 2), 12, 1.0
    if algo == "rhd":
        steps, link, msgs = 2 * math.log2(p), 2 * (p - 1) / p * S, 4 * math.log2(p)
        if p != H:  # fold the H - p extra hosts in and out
            steps, link, msgs = steps + 2, link + 2 * S, msgs + 4
        return steps, link, msgs, (p - 1) / p + (1.0 if p != H else 0.0)
    raise ValueError(algo)


def allreduce_time(algo, S, H, L, m):
    """Seconds for an AllReduce of S bytes per rank on H hosts x L ranks."""
    T = local_time(S, L, m)
    if H == 1:
        return T
    steps, link, msgs, reduced = inter_terms(algo, S, H)
    # Every local rank runs the algorithm on its slice S/L; together they fill the host's link.
    t_link = link / m.B
    per_rank_bytes = link / L
    # The ring and halving-doubling (comm/src/hier/net_algos.cc) reduce each step's received block
    # before the next step sends it (store and forward): their reductions add to the time, while
    # the kernel's copies overlap the link. The trees' reductions are in T_cpu.
    t_reduce = reduced * (S / L) / m.reduce
    serial = t_reduce if algo in ("ring", "rhd") else 0.0
    t_cpu = 2 * per_rank_bytes / m.copy + (t_reduce - serial) + msgs * m.gamma
    if m.shared_cores:
        t_cpu *= H * L / m.shared_cores
        serial *= H * L / m.shared_cores
    # The gaps in a link's traffic: each step's latency, and on the steps that reduce (the
    # reduce-scatter's), their share of the store-and-forward reduction.
    gaps = steps * m.alpha + serial
    if m.burst and t_link >= t_cpu:
        # A token-bucket shaper refills while its link idles and then passes what it saved at once:
        # where the link is the bottleneck, up to burst / rate of each step's gap costs nothing.
        hide = m.burst / (m.gbps * 1e9 / 8)
        rs = reducing_steps(algo, H)
        gaps -= rs * min(m.alpha + serial / rs, hide) + (steps - rs) * min(m.alpha, hide)
    return T + max(t_link, t_cpu) + gaps


def reducing_steps(algo, H):
    """Steps whose received block is reduced before the next step (the reduce-scatter's)."""
    p = 1 << int(math.floor(math.log2(H)))
    if algo == "ring":
        return H - 1
    if algo == "rhd":
        return int(math.log2(p)) + (1 if p != H else 0)
    return inter_terms(algo, 1, H)[0]  # the trees reduce in T_cpu: no serial share


# auto keeps the ring unless another algorithm is predicted to take at most this share of its time.
RING_PREFERENCE = 0.9


def auto_choice(S, H, L):
    """What CFX_ALGO=auto picks between hosts (comm/src/hier/net_tuning.cc, its fixed constants)."""
    if H <= 2:
        return "ring"
    s, a, B, g = S / L, 40e-6, 1.25e9, 2e-6
    lg = math.ceil(math.log2(H))
    p = 1 << int(math.floor(math.log2(H)))
    ring = 2 * (H - 1) * a + 2 * (H - 1) / H * s / B + 4 * (H - 1) * g
    tree = 2 * lg * a + 2 * lg * (s / 2) / B + 12 * g
    rhd = 2 * math.log2(p) * a + 2 * (p - 1) / p * s / B + 4 * math.log2(p) * g
    if p != H:
        rhd += 2 * a + 2 * s / B + 4 * g
    if min(tree, rhd) > RING_PREFERENCE * ring:
        return "ring"
    return "tree" if tree < rhd else "rhd"


def busbw(S, T, n):
    return S / T * 2 * (n - 1) / n


# Init (connections on demand, the bootstrap tree), fitted to perf/ probes on the 2-core VM
# (perf/RESULTS-scale.md). Each rank spends T_RANK_S of CPU of its own (topology discovery, the
# segment, its threads: 28 ms, from init of 4 to 64 ranks sharing 2 cores, 13.8 n ms). The root
# accepts every rank's hello and sends it its parent: JOIN_S per rank, in series (the slope of
# perf/probes/bootstrap_probe's join time from 256 to 1024 ranks, all on 2 cores: an upper bound).
# Then ROUNDS rounds run over the 8-ary tree (the rank table, two barriers, the rendezvous and the
# network's address all-gathers, a barrier): each climbs and descends depth(n) levels, and over
# them each interior rank sends its 8 children ROUND_BYTES_PER_RANK per rank (from the wire format:
# 132 bytes of pid and host, then addresses), copied by the kernel at BOOT_COPY bytes/s.
T_RANK_S = 0.028
JOIN_S = 37e-6
TREE_FANOUT = 8
ROUNDS = 6
ROUND_BYTES_PER_RANK = 250
BOOT_COPY = 1.9e9
# Sockets per rank after the hierarchy's ring, tree and halving-doubling between H hosts, with
# connections on demand: 3 per partner, 3 + 4.4 log2(H) (fitted from 2 to 32 hosts x 2 ranks:
# 7.2, 14.0, 18.3, 22.3 and 25.0 measured). A full mesh (CFX_RUNTIME_CONNECT=0) holds 3 (n-1).
SOCKETS_PER_PEER = 3


def tree_depth(n, k=TREE_FANOUT):
    depth, reach, level = 0, 1, 1
    while reach < n:
        level *= k
        reach += level
        depth += 1
    return depth


def init_time(n, alpha):
    d = tree_depth(n)
    rounds = ROUNDS * 2 * d * alpha + d * TREE_FANOUT * n * ROUND_BYTES_PER_RANK / BOOT_COPY
    return T_RANK_S + n * JOIN_S + rounds


def sockets_on_demand(H):
    return round(3 + 4.4 * math.log2(H))


def predictions(m, L, hosts, sizes):
    for S in sizes:
        print(f"\nAllReduce of {S >> 20} MiB, {L} ranks per host, {m.gbps:g} Gbit/s per host, alpha "
              f"{m.alpha * 1e6:g} us, shared memory {m.local / 1e9:g} GB/s, "
              f"{'no kernel copies' if math.isinf(m.copy) else f'TCP copies {m.copy / 1e9:g} GB/s'} and "
              f"reduction {m.reduce / 1e9:g} GB/s per core; time in ms, busbw in GB/s\n")
        print("| hosts | ranks | ring time | ring busbw | tree time | tree busbw | rhd time | rhd busbw | best | auto picks "
              "| init (s) | sockets per rank |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for H in hosts:
            n = H * L
            row = [str(H), str(n)]
            best, bestT = None, None
            for algo in ("ring", "tree", "rhd"):
                T = allreduce_time(algo, S, H, L, m)
                row += [f"{T * 1e3:.3f}", f"{busbw(S, T, n) / 1e9:.2f}"]
                if bestT is None or T < bestT:
                    best, bestT = algo, T
            row += [best, auto_choice(S, H, L), f"{init_time(n, m.alpha):.2f}", str(sockets_on_demand(H))]
            print("| " + " | ".join(row) + " |")


# tests/netns measurements (perf/RESULTS-scale.md, 2026-11-26, 23:31-23:50 UTC,
# perf/probes/model_check_runs.sh): 1 rank per host, links shaped to 500 Mbit/s with a 256 KiB tbf
# burst (tests/netns/hosts.sh --rate 500mbit --burst 256kb), medians of 3: AllReduce ms by size, with
# CFX_ALGO=auto (whatever it picks) and ring and rhd forced. The namespaces' TCP takes the machine's
# congestion control: cubic (Linux's usual default, set with sysctl net.ipv4.tcp_congestion_control
# for the run) and bbr, this VM's default.
MiB = 1 << 20
SIZES = (MiB, 4 * MiB, 16 * MiB, 64 * MiB)
MEASURED = {
    "cubic": {
        (2, "auto"): (17.50, 70.16, 285.12, 1173.05),
        (4, "auto"): (26.22, 106.01, 431.14, 1750.10),
        (4, "ring"): (26.26, 105.43, 431.29, 1750.48),
        (4, "rhd"): (26.06, 107.77, 446.45, 1808.36),
        (8, "auto"): (34.10, 125.04, 518.00, 2101.31),
        (8, "ring"): (30.32, 124.63, 514.23, 2099.34),
        (8, "rhd"): (31.31, 156.94, 552.85, 2197.28),
    },
    "bbr": {
        (2, "auto"): (17.47, 70.27, 301.34, 1208.30),
        (4, "auto"): (26.28, 105.66, 442.09, 1818.26),
        (4, "ring"): (26.27, 106.24, 433.73, 1832.31),
        (4, "rhd"): (26.24, 135.74, 499.73, 2243.54),
        (8, "auto"): (31.88, 128.09, 512.31, 2212.69),
        (8, "ring"): (31.10, 128.62, 522.65, 2239.38),
        (8, "rhd"): (31.27, 183.23, 907.90, 3406.89),
    },
}

# The network alone, no Conflux: perf/probes/link_probe.py replaying an algorithm's traffic over
# plain blocking TCP sockets (one per pair, no copies, no reduction) under the same shaping, every
# host at once; the slowest host's ms, medians of 3. The ring's at 64 MiB, same night, each
# congestion control (its smaller sizes pay Python's thread start per step: 50 ms at 8 hosts and 1
# MiB); rhd's, 2026-11-26 afternoon, bbr.
REPLAY = {
    ("ring", "cubic"): {2: 1131.6, 4: 1688.6, 8: 1984.7},
    ("ring", "bbr"): {2: 1130.5, 4: 1693.3, 8: 2006.4},
    ("rhd", "bbr"): {2: 1135.3, 4: 1738.3, 8: 2069.8},
}


def check(m):
    """The model against CFX_ALGO=auto (what it picks), then against ring and rhd forced."""
    for cc, measured in MEASURED.items():
        worst = {}
        for title, which in (("CFX_ALGO=auto", ("auto",)), ("ring and rhd forced", ("ring", "rhd"))):
            print(f"\nTCP congestion control {cc}, {title}:\n")
            print("| hosts | algorithm | size | model (ms) | measured (ms) | measured / model |")
            print("|---|---|---|---|---|---|")
            for (H, run), times in sorted(measured.items()):
                if run not in which:
                    continue
                for S, t in zip(SIZES, times):
                    algo = auto_choice(S, H, 1) if run == "auto" else run
                    T = allreduce_time(algo, S, H, 1, m) * 1e3
                    worst[run] = max(worst.get(run, 0.0), abs(t / T - 1))
                    label = f"{algo} (auto)" if run == "auto" else algo
                    print(f"| {H} | {label} | {S >> 20} MiB | {T:.1f} | {t:.1f} | {t / T:.3f} |")
        print(f"\n{cc}: largest error, " + ", ".join(f"{k} {v * 100:.1f}%" for k, v in worst.items()))
    print("\nthe network alone at 64 MiB: an algorithm's traffic replayed over plain TCP by "
          "perf/probes/link_probe.py (no Conflux) against the model's link term:\n")
    print("| traffic | TCP | hosts | model, link only (ms) | replay (ms) | replay / model |")
    print("|---|---|---|---|---|---|")
    for (algo, cc), rows in REPLAY.items():
        for H, t in sorted(rows.items()):
            T = inter_terms(algo, 64 * MiB, H)[1] / m.B * 1e3
            print(f"| {algo} | {cc} | {H} | {T:.1f} | {t:.1f} | {t / T:.3f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gbps", type=float, default=200.0, help="link rate per host, Gbit/s")
    ap.add_argument("--alpha-us", type=float, default=5.0, help="per-message latency between hosts, us")
    ap.add_argument("--local-gbs", type=float, default=40.0, help="shared-memory reduce/copy rate, GB/s")
    ap.add_argument("--copy-gbs", type=float, default=1.9,
                    help="kernel TCP copy rate per core, GB/s (this VM: 1.9); 0: no kernel copies (RDMA)")
    ap.add_argument("--reduce-gbs", type=float, default=10.0, help="reduction rate per core, GB/s")
    ap.add_argument("--ranks", type=int, default=8, help="ranks per host")
    ap.add_argument("--hosts", default="16,32,64,128,256,512,1024")
    ap.add_argument("--sizes", default="1M,256M")
    ap.add_argument("--check", action="store_true", help="compare with the namespace measurements")
    a = ap.parse_args()
    m = Machine(gbps=a.gbps, alpha=a.alpha_us * 1e-6, local=a.local_gbs * 1e9,
                copy=a.copy_gbs * 1e9 if a.copy_gbs > 0 else math.inf,
                reduce=a.reduce_gbs * 1e9)
    if a.check:
        check(CHECK_MACHINE)
        return
    predictions(m, a.ranks, [int(h) for h in a.hosts.split(",")], [parse_size(s) for s in a.sizes.split(",")])


# The namespace machine, from probes on the 2-core VM (perf/RESULTS-scale.md), not fitted to MEASURED:
# B from plain TCP replaying the ring's and rhd's traffic at 2 hosts and 64 MiB (REPLAY: 59.1 MB/s,
# 0.946 of 500 Mbit/s; the rest is TCP/IP headers and ACKs); the bucket hosts.sh gives tbf; alpha
# from the 2-host 8 B AllReduce (260.6 us for its 2 steps); the copy rate from 8 unshaped hosts (16
# and 64 MiB: 1.8-2.1 GB/s of TCP traffic through the 2 cores); the reduction rate from
# `reduce_kernel_bench 33554432 2` (float sum of DRAM-resident buffers: 4.1 GB/s of output on one
# core); every rank on the same 2 cores.
CHECK_MACHINE = replace(Machine(), gbps=0.5, link_efficiency=59.1e6 / 62.5e6, burst=256 << 10, alpha=130e-6,
                        gamma=0.0, shared_cores=2,
                        copy=1.9e9, reduce=4.1e9, local=10e9)

if __name__ == "__main__":
    main()
