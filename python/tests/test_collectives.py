"""Every backend method x every mapped dtype x (2, 3, 4 ranks), bitwise against an exact reference
and against Gloo in the same job (collectives_worker.py)."""
import pytest

import launch


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_method_dtype_matrix(nranks):
    result = launch.run("collectives_worker.py", nranks, timeout=600)
    launch.assert_ok(result)
    assert all(" 0 failures" in o for o in result.outputs), result.text()
