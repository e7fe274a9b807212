"""torch's 'torch.backends' entry point for Conflux (see pyproject.toml).

torch calls register() at the end of `import torch`; a failure here must never make `import torch`
fail, so it is reported as a warning and the backend is simply not registered.
"""
import warnings


def register() -> None:
    try:
        import torch_conflux  # noqa: F401  (registers "conflux" on import)
    except Exception as err:  # pragma: no cover - reported, not raised
        warnings.warn(f"torch_conflux: the 'conflux' backend is not available: {err}")
