"""One rank of the error scenarios (argv[1] names it); prints 'OK <detail>' when its rank behaved."""
import datetime
import os
import re
import signal
import sys
import threading
import time

import torch
import torch.distributed as dist

import torch_conflux  # noqa: F401

RANK, N = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def expect_error(fn, *words):
    try:
        fn()
    except RuntimeError as e:
        text = str(e)
        missing = [w for w in words if w not in text]
        assert not missing, f"error text lacks {missing}: {text}"
        return text
    raise AssertionError(f"no error; expected one naming {words}")


def assert_names(text, *patterns):
    """Each regular expression matches the error text (a rank as a word, not a digit anywhere)."""
    missing = [p for p in patterns if not re.search(p, text)]
    assert not missing, f"error text lacks {missing}: {text}"


def culprit(rank, how):
    """The words that blame `rank`: 'rank 2 (pid 4711) stalled', 'rank 3 (pid 99) exited'."""
    return rf"\brank {rank} \(pid \d+\) {how}"


def bad_input():
    """Bad arguments raise RuntimeError naming the method, before anything is sent; the group stays usable."""
    dist.init_process_group("conflux", timeout=datetime.timedelta(seconds=30))
    expect_error(lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16)), "allreduce", "Short")
    expect_error(lambda: dist.all_reduce(torch.ones(4, 4).t()), "allreduce", "contiguous")
    expect_error(lambda: dist.all_reduce(torch.ones(4, dtype=torch.uint16)), "allreduce", "UInt16")
    expect_error(lambda: dist.all_reduce(torch.ones(4, dtype=torch.bool), op=dist.ReduceOp.AVG), "allreduce", "AVG")
    expect_error(lambda: dist.all_reduce(torch.ones(4), op=dist.ReduceOp.BXOR), "allreduce", "not supported")
    expect_error(lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32), op=dist._make_nccl_premul_sum(2.0)),
                 "allreduce", "PREMUL_SUM")
    expect_error(lambda: dist.reduce_scatter_tensor(torch.empty(3), torch.empty(3 * N + 1)), "reduce_scatter_tensor")
    expect_error(lambda: dist.all_gather_into_tensor(torch.empty(2 * N, dtype=torch.int64), torch.empty(2)),
                 "all_gather_into_tensor", "dtype")
    expect_error(lambda: dist.all_to_all_single(torch.empty(N), torch.empty(N), [1] * N, [2] * N), "alltoall_base")
    expect_error(lambda: dist.all_reduce(torch.ones(4).to_sparse()), "allreduce")
    t = torch.full((5,), float(RANK + 1))
    dist.all_reduce(t)
    assert t.tolist() == [N * (N + 1) / 2] * 5, t
    z = torch.full((3,), complex(RANK, 1))  # torch itself views complex as float pairs for SUM
    dist.all_reduce(z)
    assert z.tolist() == [complex(N * (N - 1) / 2, N)] * 3, z
    dist.destroy_process_group()
    print("OK usable after bad input")


def mismatch():
    """Ranks calling different collectives: every rank raises, naming the mismatch, at the latest
    in its next call here (a small broadcast's root waits for no one, as an eager send does: it
    learns of the mismatch from its readers unless their calls are already there when it publishes;
    they fail and make no other call, so its next call cannot complete)."""
    dist.init_process_group("conflux", timeout=datetime.timedelta(seconds=20))
    t = torch.ones(8)
    start = time.monotonic()
    if RANK == 0:
        try:
            dist.broadcast(t, src=0)
        except RuntimeError as e:
            text = str(e)
            assert_names(text, r"conflux broadcast failed on rank 0 of 2\b")
        else:
            text = expect_error(lambda: dist.all_reduce(torch.ones(1)), "allreduce")
    else:
        text = expect_error(lambda: dist.all_reduce(t), "allreduce")
        assert_names(text, rf"conflux allreduce failed on rank {RANK} of 2\b")
    # Either way the words name the mismatch, both calls and both ranks.
    assert_names(text, r"collective mismatch", r"\brank 0 called Broadcast\b|\bbut rank 0 called Broadcast\b",
                 r"\brank 1 called AllReduce\b|\bbut rank 1 called AllReduce\b")
    # the group is unusable afterwards, and destroying it still returns
    expect_error(lambda: dist.all_reduce(torch.ones(1)), "allreduce")
    dist.destroy_process_group()
    print(f"OK raised after {time.monotonic() - start:.1f} s: {text}")


def timeout():
    """A rank that never arrives: the others raise within init_process_group's timeout, naming it."""
    dist.init_process_group("conflux", timeout=datetime.timedelta(seconds=3))
    if RANK == N - 1:
        time.sleep(12)
        dist.destroy_process_group()
        print("OK stalled rank")
        return
    start = time.monotonic()
    text = expect_error(lambda: dist.all_reduce(torch.ones(4)), "allreduce", f"rank {RANK} of {N}")
    assert_names(text, culprit(N - 1, "stalled"))
    took = time.monotonic() - start
    assert took < 3 + 5, f"took {took:.1f} s"
    dist.destroy_process_group()
    print(f"OK raised after {took:.1f} s: {text}")


def killed():
    """A rank SIGKILLed in the middle of a large all_reduce: every other rank raises within the timeout
    plus 5 s, naming the dead rank."""
    dist.init_process_group("conflux", timeout=datetime.timedelta(seconds=10))
    t = torch.ones(16 << 20)
    dist.all_reduce(t)
    victim = N - 1
    if RANK == victim:
        threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
    start = time.monotonic()
    try:
        for _ in range(1000):
            dist.all_reduce(t)
    except RuntimeError as e:
        took = time.monotonic() - start
        text = str(e)
        assert_names(text, rf"conflux allreduce failed on rank {RANK} of {N}\b", culprit(victim, "exited"))
        assert took < 10 + 5, f"took {took:.1f} s"
        dist.destroy_process_group()
        print(f"OK raised after {took:.1f} s: {text}")
        return
    raise AssertionError("1000 all_reduces completed with a dead rank")


def clean_exit():
    """A normal destroy_process_group leaves no thread of the backend (the worker, Conflux's progress
    threads) and nothing in /dev/shm."""
    before = set(os.listdir("/proc/self/task"))
    dist.init_process_group("conflux")
    g = dist.new_group(list(range(N)))
    t = torch.ones(1 << 20)
    work = dist.all_reduce(t, async_op=True)
    dist.all_reduce(t, group=g)
    work.wait()
    # an operation issued after shutdown fails at once instead of waiting forever
    backend = g._get_backend(torch.device("cpu"))
    backend.shutdown()
    expect_error(lambda: backend.allreduce([torch.ones(2)]).wait(), "shut down")
    dist.destroy_process_group()
    after = set(os.listdir("/proc/self/task"))
    names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in after - before]
    extra = [n for n in names if not n.startswith("pt_")]  # pt_*: torch's own (the TCPStore server)
    assert not extra, f"threads left running: {extra}"
    print("OK no thread left")


if __name__ == "__main__":
    {"bad_input": bad_input, "mismatch": mismatch, "timeout": timeout, "killed": killed,
     "clean_exit": clean_exit}[sys.argv[1]]()
