"""Bad input, mismatched calls, a stalled rank, a killed rank, and a clean shutdown (errors_worker.py)."""
import os

import pytest

import launch


def shm_entries():
    return {e for e in os.listdir("/dev/shm") if e.startswith("cfx")}


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
    assert shm_entries() <= before, f"left in /dev/shm: {shm_entries() - before}"


def test_destroy_leaves_no_thread_and_no_shared_memory():
    before = shm_entries()
    launch.assert_ok(launch.run("errors_worker.py", 2, "clean_exit", timeout=120))
    assert shm_entries() <= before, f"left in /dev/shm: {shm_entries() - before}"
