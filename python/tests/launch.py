"""Runs a worker script as N real rank processes, the way torchrun would (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT; init_method env://), and collects each rank's exit code and output.
A job that outlives its limit is killed whole and reported, never left running."""
import os
import pathlib
import socket
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Result:
    def __init__(self, codes, outputs, seconds):
        self.codes, self.outputs, self.seconds = codes, outputs, seconds

    def text(self) -> str:
        return "\n".join(f"--- rank {r} (exit {c}) ---\n{o}" for r, (c, o) in enumerate(zip(self.codes, self.outputs)))


def run(script: str, nranks: int, *args: str, timeout: float = 240, env: dict | None = None,
        rank_env=None) -> Result:
    """`env`: extra variables for every rank; `rank_env(rank)`: more for one rank (a dict)."""
    port = free_port()
    procs = []
    start = time.monotonic()
    for rank in range(nranks):
        e = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(nranks), LOCAL_RANK=str(rank),
                 LOCAL_WORLD_SIZE=str(nranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                 OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
        e.update(env or {})
        e.update(rank_env(rank) if rank_env else {})
        procs.append(subprocess.Popen([sys.executable, str(HERE / script), *args], env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [""] * nranks
    deadline = start + timeout
    for rank, p in enumerate(procs):
        try:
            outputs[rank], _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            outputs[rank] = (p.communicate()[0] or "") + f"\n[launch] killed after {timeout} s"
    for p in procs:
        if p.poll() is None:
            p.kill()
    for rank, p in enumerate(procs):
        if not outputs[rank]:
            outputs[rank] = p.communicate()[0] or ""
    return Result([p.wait() for p in procs], outputs, time.monotonic() - start)


def assert_ok(result: Result) -> None:
    assert all(c == 0 for c in result.codes), result.text()
