"""DistributedDataParallel on the 'conflux' backend equals one process (ddp_worker.py)."""
import pytest

import launch


@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
def test_ddp_matches_one_process(nranks):
    result = launch.run("ddp_worker.py", nranks, timeout=300)
    launch.assert_ok(result)
    print(result.outputs[0])
