import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


def pytest_collection_modifyitems(config, items):
    """Runs only the SELECTED tests of torch's suite (test_torch_suite.py); the rest are deselected."""
    keep, drop = [], []
    for item in items:
        selected = getattr(item.module, "SELECTED", None)
        (drop if selected is not None and item.name not in selected else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A selected test of torch's suite that is skipped fails: torch's spawner turns a rank's skip
    exit code into a skip, which would otherwise read as passed in CTest."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and getattr(item.module, "SELECTED", None) is not None:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"{item.name} was selected but skipped: {reason}"
