"""examples/torch_elastic.py under torchrun: 4 ranks, one SIGKILLed at step 5 (rank 0 too); the
survivors shrink the world group (torch_conflux.shrink) and finish the run with 3 ranks, with no
restart, holding bitwise the parameters of one process that takes the same steps."""
import os
import pathlib
import subprocess
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import torch_elastic  # noqa: E402


@pytest.mark.parametrize("victim", [2, 0])
def test_survivors_shrink_and_match_one_process(tmp_path, victim):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4",
           str(ROOT / "examples" / "torch_elastic.py"), "--kill-rank", str(victim), "--kill-step", "5",
           "--steps", "10", "--out", str(tmp_path)]
    run = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    assert run.returncode == 0, run.stdout[-6000:]
    survivors = [r for r in range(4) if r != victim]
    for r in survivors:
        assert f"[rank {r}] ranks [{victim}] gone; now rank {survivors.index(r)} of 3" in run.stdout, run.stdout[-6000:]
    assert f"rank {victim} was killed at step 5, as planned" in run.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"params_rank{r}.pt" for r in survivors]
    expected = torch_elastic.replay(10, 5, 4)
    for r in survivors:
        got = torch.load(tmp_path / f"params_rank{r}.pt")
        for a, b in zip(got, expected):
            assert torch.equal(a, b), f"rank {r}: max difference {(a - b).abs().max().item()}"
