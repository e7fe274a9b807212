"""Bad input, mismatched calls, a stalled rank, a killed rank, and a clean shutdown (errors_worker.py)."""
import os
import time

import pytest

import launch


def shm_entries():
    return {e for e in os.listdir("/dev/shm") if e.startswith("cfx")}


def left_since(before, grace=10.0):
    """Segments that appeared since `before` and stay. A job of another test running beside this one
    (CTest runs two at a time) holds its segment's name for a moment during its init; a leak stays."""
    deadline = time.monotonic() + grace
    while True:
        new = shm_entries() - before
        if not new or time.monotonic() > deadline:
            return new
        time.sleep(0.1)


def test_bad_input_raises_and_keeps_the_group_usable():
    launch.assert_ok(launch.run("errors_worker.py", 3, "bad_input", timeout=120))


def test_mismatched_collectives_raise_on_every_rank():
    result = launch.run("errors_worker.py", 2, "mismatch", timeout=120)
    launch.assert_ok(result)


def test_stalled_rank_is_named_within_the_timeout():
    result = launch.run("errors_worker.py", 3, "timeout", timeout=120)
    launch.assert_ok(result)


@pytest.mark.parametrize("nranks", [2, 4])
def test_killed_rank_is_named_within_the_timeout(nranks):
    before = shm_entries()
    result = launch.run("errors_worker.py", nranks, "killed", timeout=120)
    assert result.codes[-1] == -9, result.text()
    assert all(c == 0 for c in result.codes[:-1]), result.text()
    left = left_since(before)
    assert not left, f"left in /dev/shm: {left}"


def test_destroy_leaves_no_thread_and_no_shared_memory():
    before = shm_entries()
    launch.assert_ok(launch.run("errors_worker.py", 2, "clean_exit", timeout=120))
    left = left_since(before)
    assert not left, f"left in /dev/shm: {left}"
