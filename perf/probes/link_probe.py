#!/usr/bin/env python3
"""What the emulated network itself delivers, with no Conflux in the way (issue #35, section 4).

Run under tests/netns/hosts.sh (it reads CFX_TEST_HOSTS, "ns:ip:ranks ..."): one plain-TCP worker
per host, inside the host's namespace, replays the traffic of recursive halving-doubling between
hosts: for an AllReduce of S bytes, reduce-scatter steps with partner i ^ 2^k moving S / 2^(k+1)
bytes each way, then the all-gather's steps in reverse, every host at once, no copies, and no
reduction unless --reduce (numpy adds each reduce-scatter step's received half into a float32
buffer before the next step, as a store-and-forward AllReduce must). With --pattern pair, each host streams S bytes each way with host i ^ 1 (the ring of 2
hosts is the same traffic). With --pattern ring, the ring's traffic: 2 (H - 1) steps, each sending
S / H bytes to host i + 1 while receiving as many from host i - 1. It prints, per size, the median time of the slowest host and the
payload rate per host link (bytes each host sent / time).

    tests/netns/hosts.sh --layout 1,1,1,1,1,1,1,1 --rate 500mbit --burst 256kb -- \\
        perf/probes/link_probe.py --sizes 4M,16M,64M --repeat 3

For rhd, a host count that is not a power of two is refused (the probe has no fold-in steps).
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

PORT = 47611
CHUNK = 1 << 20


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def steps(pattern, index, hosts, size):
    """[(send to, receive from, bytes each way)] in order, for host `index` of `hosts`."""
    if pattern == "pair":
        return [(index ^ 1, index ^ 1, size)]
    if pattern == "ring":
        return [((index + 1) % hosts, (index - 1) % hosts, size // hosts)] * (2 * (hosts - 1))
    k, out = 1, []
    while k < hosts:
        size //= 2
        out.append((index ^ k, index ^ k, size))
        k <<= 1
    return out + out[::-1]


def exchange(to, sock, nbytes, payload, into=None):
    """Send nbytes on `to` while receiving as many from sock (into `into` if given)."""
    def send():
        left = nbytes
        while left > 0:
            n = min(left, len(payload))
            to.sendall(payload[:n])
            left -= n

    t = threading.Thread(target=send)
    t.start()
    buf = bytearray(CHUNK) if into is None else into
    left = nbytes
    while left > 0:
        n = sock.recv_into(buf if into is None else into[nbytes - left:], min(left, CHUNK))
        if n == 0:
            raise RuntimeError("peer closed")
        left -= n
    t.join()


def worker(a):
    ips = a.ips.split(",")
    hosts, me = len(ips), a.index
    plan = steps(a.pattern, me, hosts, a.size)
    partners = sorted({p for step in plan for p in step[:2]})
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((ips[me], PORT))
    listener.listen(16)
    conns = {}
    for p in partners:  # the lower index connects, the higher accepts
        if me < p:
            deadline = time.time() + 10
            while True:
                try:
                    s = socket.create_connection((ips[p], PORT), timeout=10)
                    break
                except OSError:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.05)
            s.sendall(me.to_bytes(4, "little"))
            conns[p] = s
    while len(conns) < len(partners):
        s, _ = listener.accept()
        conns[int.from_bytes(s.recv(4, socket.MSG_WAITALL), "little")] = s
    for s in conns.values():
        s.settimeout(None)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    payload = bytes(CHUNK)
    reduce_steps = len(plan) // 2 if a.reduce and a.pattern == "rhd" else 0
    if reduce_steps:
        import numpy as np  # only for --reduce
        keep = np.ones(plan[0][2] // 4, dtype=np.float32)
        tmp = np.zeros(plan[0][2] // 4, dtype=np.float32)
    time.sleep(max(0.0, a.start - time.time()))
    t0 = time.perf_counter()
    for k, (to, frm, nbytes) in enumerate(plan):
        if k < reduce_steps:  # the reduce-scatter's steps: receive into tmp, then add it in
            exchange(conns[to], conns[frm], nbytes, payload, memoryview(tmp).cast("B"))
            np.add(keep[: nbytes // 4], tmp[: nbytes // 4], out=keep[: nbytes // 4])
        else:
            exchange(conns[to], conns[frm], nbytes, payload)
    elapsed = time.perf_counter() - t0
    sent = sum(step[2] for step in plan)
    print(json.dumps({"index": me, "seconds": elapsed, "sent": sent}))


def run_once(hosts, pattern, size, reduce):
    ips = ",".join(h.split(":")[1] for h in hosts)
    start = time.time() + 1.0 + 0.1 * len(hosts)
    procs = [subprocess.Popen(["ip", "netns", "exec", h.split(":")[0], sys.executable, os.path.abspath(__file__),
                               "--worker", "--index", str(i), "--ips", ips, "--pattern", pattern,
                               "--size", str(size), "--start", repr(start)] + (["--reduce"] if reduce else []),
                              stdout=subprocess.PIPE, text=True)
             for i, h in enumerate(hosts)]
    results = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        if p.returncode != 0:
            sys.exit(f"link_probe: a worker failed ({p.returncode})")
        results.append(json.loads(out))
    slowest = max(r["seconds"] for r in results)
    return slowest, results[0]["sent"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pattern", choices=["rhd", "pair", "ring"], default="rhd")
    ap.add_argument("--sizes", default="1M,4M,16M,64M")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reduce", action="store_true",
                    help="rhd: add each reduce-scatter step's received half into a float32 buffer (numpy) "
                         "before the next step, as a store-and-forward AllReduce does")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--index", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--ips", help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--start", type=float, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a)
        return
    hosts = os.environ.get("CFX_TEST_HOSTS", "").split()
    if len(hosts) < 2 or (a.pattern == "rhd" and len(hosts) & (len(hosts) - 1)):
        sys.exit("link_probe: run it under tests/netns/hosts.sh with 2 or more hosts (rhd: 2, 4, 8, ...)")
    link = os.environ.get("CFX_TEST_LINK", "").strip() or "unshaped"
    what = " with the reductions" if a.reduce and a.pattern == "rhd" else ""
    print(f"{len(hosts)} hosts, {a.pattern} traffic{what}, links: {link}; medians of {a.repeat}\n")
    print("| size | slowest host (ms) | bytes each host sent | per host link (MB/s) |")
    print("|---|---|---|---|")
    for s in a.sizes.split(","):
        size = parse_size(s)
        times, sent = [], 0
        for _ in range(a.repeat):
            t, sent = run_once(hosts, a.pattern, size, a.reduce)
            times.append(t)
        t = statistics.median(times)
        print(f"| {s} | {t * 1e3:.1f} | {sent} | {sent / t / 1e6:.1f} |", flush=True)


if __name__ == "__main__":
    main()
