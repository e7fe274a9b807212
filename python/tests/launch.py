"""Runs a worker script as N real rank processes, the way torchrun would (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT; init_method env://), and collects each rank's exit code and output.
A job that outlives its limit is killed whole and reported, never left running.

Each rank is a process forked from this one after it imported torch, which then runs the script
as __main__ with its own environment and arguments: importing torch afresh in every rank cost
2.5 s of CPU each, a fifth of the PyTorch tests' time on 2 cores. This process holds no process
group, no thread of Conflux and no CUDA context, so a forked rank starts as clean as a new one."""
import atexit
import multiprocessing
import os
import pathlib
import random
import runpy
import socket
import sys
import tempfile
import time
import traceback

import torch  # noqa: F401  imported once here, inherited by every forked rank

HERE = pathlib.Path(__file__).resolve().parent


def _ephemeral_low() -> int:
    try:
        return int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A port for the job's store, below the kernel's ephemeral range: a port that range gave out
    (bind to 0, then close) can be handed to another test's connection or listener before rank 0's
    store binds it, which failed a CI run with EADDRINUSE."""
    low = min(_ephemeral_low(), 32768)
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(max(1024, low - 12000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


class Result:
    def __init__(self, codes, outputs, seconds):
        self.codes, self.outputs, self.seconds = codes, outputs, seconds

    def text(self) -> str:
        return "\n".join(f"--- rank {r} (exit {c}) ---\n{o}" for r, (c, o) in enumerate(zip(self.codes, self.outputs)))


def _rank_main(script: str, args: tuple, env: dict, out_path: str) -> None:
    """In the forked rank: output to its file, its own environment and argv, the script as __main__."""
    fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    atexit._clear()  # this process's exit handlers (pytest's, the temporary directory's) are not the rank's
    os.environ.clear()
    os.environ.update(env)
    sys.argv = [script, *args]
    sys.path[0] = str(HERE)
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, (int, type(None))):
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: B902  reported in the rank's output, as an uncaught one would be
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()  # what the interpreter runs at exit: the handlers the script registered
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run(script: str, nranks: int, *args: str, timeout: float = 240, env: dict | None = None,
        rank_env=None) -> Result:
    """`env`: extra variables for every rank; `rank_env(rank)`: more for one rank (a dict). A job
    whose store found its port taken (EADDRINUSE in rank 0's output) runs again on another, twice
    at most: the port was lost to another process, not to the code under test."""
    for attempt in range(3):
        result = _run_once(script, nranks, args, timeout, env, rank_env, free_port())
        if result.codes[0] == 0 or "EADDRINUSE" not in result.outputs[0] or attempt == 2:
            return result
        print(f"[launch] rank 0's store could not bind its port; running {script} again", file=sys.stderr)
    return result


def _run_once(script: str, nranks: int, args: tuple, timeout: float, env: dict | None, rank_env, port: int) -> Result:
    fork = multiprocessing.get_context("fork")
    procs = []
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cfx-launch-") as tmp:
        paths = [os.path.join(tmp, f"rank{rank}.out") for rank in range(nranks)]
        for rank in range(nranks):
            e = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(nranks), LOCAL_RANK=str(rank),
                     LOCAL_WORLD_SIZE=str(nranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                     OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
            e.update(env or {})
            e.update(rank_env(rank) if rank_env else {})
            p = fork.Process(target=_rank_main, args=(str(HERE / script), args, e, paths[rank]), daemon=False)
            p.start()
            procs.append(p)
        deadline = start + timeout
        killed = False
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.exitcode is None:
                killed = True
                break
        if killed:
            for p in procs:
                if p.exitcode is None:
                    p.kill()
                p.join()
        outputs = []
        for rank, p in enumerate(procs):
            with open(paths[rank], errors="replace") as f:
                text = f.read()
            if killed and p.exitcode == -9:
                text += f"\n[launch] killed after {timeout} s"
            outputs.append(text)
    return Result([p.exitcode for p in procs], outputs, time.monotonic() - start)


def assert_ok(result: Result) -> None:
    assert all(c == 0 for c in result.codes), result.text()
