"""The exact reductions under PyTorch: DDP with CFX_REDUCE_EXACT=1 on the same 4 ranks' data, run as
one host of 4 ranks and as 2 hosts of 2 (told apart by CFX_HOST_ID, TCP between them: the
cross-host path), gives bitwise identical parameters after 5 steps (exact_worker.py)."""
import re

import launch


def params(result):
    launch.assert_ok(result)
    digests = {re.search(r"params ([0-9a-f]+)", o).group(1) for o in result.outputs}
    assert len(digests) == 1, result.text()  # every rank holds the same parameters
    return digests.pop()


def test_ddp_exact_same_bits_on_one_host_and_across_two():
    env = {"CFX_REDUCE_EXACT": "1"}
    one_host = params(launch.run("exact_worker.py", 4, env=env, timeout=300))
    two_hosts = params(launch.run("exact_worker.py", 4, env=dict(env, CFX_NET="tcp"), timeout=300,
                                  rank_env=lambda r: {"CFX_HOST_ID": f"host{r // 2}"}))
    assert one_host == two_hosts
