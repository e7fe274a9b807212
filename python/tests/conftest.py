import pathlib
import sys

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
