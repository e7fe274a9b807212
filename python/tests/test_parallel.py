"""PyTorch's own parallel libraries (DTensor, tensor and sequence parallelism, pipelining schedules,
FSDP2 with TP on a 2-D mesh, DCP, object collectives, monitored_barrier) on 'conflux' at 2 and 4
ranks, each case against one process (parallel_worker.py); the same worker on Gloo is the control
that the cases themselves hold. A case torch itself refuses for a backend must be listed, with
torch's message, in README.md's PyTorch section."""
import pathlib
import re

import pytest

import launch

README = " ".join((pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text().split())  # lines joined
CASE = re.compile(r"^case (\w+): (ok|refused by torch: (.*)|FAIL .*)$", re.M)


@pytest.mark.parametrize("backend,nranks", [("conflux", 2), ("conflux", 4), ("gloo", 2), ("gloo", 4)])
def test_parallel_libraries_match_one_process(backend, nranks):
    result = launch.run("parallel_worker.py", nranks, backend, timeout=300)
    launch.assert_ok(result)
    for rank, out in enumerate(result.outputs):
        cases = CASE.findall(out)
        assert len(cases) == 13, f"rank {rank} reported {len(cases)} of 13 cases:\n{out}"
        for name, verdict, refusal in cases:
            assert not verdict.startswith("FAIL"), f"rank {rank} {name}: {verdict}\n{result.text()}"
            if refusal:
                assert backend == "conflux" and refusal in README, f"{name} refused on {backend}: {refusal}"
