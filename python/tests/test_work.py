"""What a Work promises: wait and is_completed agree, futures carry results, async_op overlaps
(work_worker.py)."""
import pytest

import launch


@pytest.mark.parametrize("nranks", [2, 3])
def test_completed_once_wait_returns(nranks):
    launch.assert_ok(launch.run("work_worker.py", nranks, "completed_after_wait", timeout=180))


def test_future_carries_the_result():
    launch.assert_ok(launch.run("work_worker.py", 3, "future", timeout=120))


def test_async_op_returns_before_a_late_peer_arrives():
    launch.assert_ok(launch.run("work_worker.py", 2, "async", timeout=120))
