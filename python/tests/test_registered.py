"""Registered memory from the backend (allocate_tensor, FSDP2's allocate-from-process-group):
exact results with no staging copy (registered_worker.py)."""
import pytest

import launch

# Every size takes the zero-copy path, so FSDP2's small test model exercises it too.
ENV = {"CFX_REGISTERED_MIN_BYTES": "1"}


@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_registered_tensors(nranks):
    result = launch.run("registered_worker.py", nranks, "tensors", timeout=240, env=ENV)
    launch.assert_ok(result)


@pytest.mark.parametrize("nranks", [2, 4])
def test_fsdp_allocates_from_the_process_group(nranks):
    result = launch.run("registered_worker.py", nranks, "fsdp", timeout=300, env=ENV)
    launch.assert_ok(result)
    print(result.outputs[0])
