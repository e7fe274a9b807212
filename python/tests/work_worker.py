"""One rank of the Work-semantics checks: what wait(), is_completed(), is_success() and get_future()
promise, as Gloo's Work keeps them. Prints 'OK <detail>' when its rank behaved."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

import torch_conflux  # noqa: F401

RANK, N = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def completed_after_wait():
    """Once wait() returns, is_completed() is already true, for every kind of
    operation and on every one of many tries (the two used to be set after waiters were woken)."""
    dist.init_process_group("conflux", timeout=datetime.timedelta(seconds=60))
    t = torch.ones(8)
    for i in range(300):
        works = [dist.all_reduce(t, async_op=True), dist.broadcast(t, 0, async_op=True)]
        if RANK == 0:
            works += [dist.isend(torch.full((4,), float(i)), p) for p in range(1, N)]
        else:
            got = torch.empty(4)
            works.append(dist.irecv(got, 0))
        for w in works:
            w.wait()
            assert w.is_completed(), f"try {i}: wait() returned, is_completed() is False"
        if RANK != 0:
            assert torch.equal(got, torch.full((4,), float(i))), (i, got)
    dist.destroy_process_group()
    print("OK 300 tries")


def future_carries_the_result():
    """get_future() completes with the outputs; a then() callback sees the reduced values; a
    synchronous call's Work is already complete."""
    dist.init_process_group("conflux", timeout=datetime.timedelta(seconds=60))
    t = torch.full((5,), float(RANK + 1))
    fut = dist.all_reduce(t, async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2)
    total = float(N * (N + 1) // 2)
    assert torch.equal(fut.wait()[0], torch.full((5,), total)), fut.wait()
    assert torch.equal(doubled.wait(), torch.full((5,), 2 * total)), doubled.wait()
    out = torch.empty(N * 2)
    fut = dist.all_gather_into_tensor(out, torch.full((2,), float(RANK)), async_op=True).get_future()
    assert torch.equal(fut.wait()[0], torch.arange(N).float().repeat_interleave(2)), out
    dist.destroy_process_group()
    print("OK future")


def async_returns_before_the_peer_arrives():
    """async_op=True returns at once and the caller runs on while a late peer holds the collective;
    wait() then finishes it. The last rank arrives 1.5 s late."""
    dist.init_process_group("conflux", timeout=datetime.timedelta(seconds=60))
    dist.barrier()
    t = torch.ones(1 << 16)
    if RANK == N - 1:
        time.sleep(1.5)
    start = time.monotonic()
    work = dist.all_reduce(t, async_op=True)
    returned = time.monotonic() - start
    if RANK != N - 1:
        assert returned < 0.5, f"async all_reduce blocked the caller {returned:.2f} s"
        assert not work.is_completed(), "completed before the late peer called"
    work.wait()
    assert work.is_completed() and torch.equal(t, torch.full_like(t, float(N)))
    dist.destroy_process_group()
    print(f"OK returned after {returned * 1e3:.1f} ms")


if __name__ == "__main__":
    {"completed_after_wait": completed_after_wait, "future": future_carries_the_result,
     "async": async_returns_before_the_peer_arrives}[sys.argv[1]]()
