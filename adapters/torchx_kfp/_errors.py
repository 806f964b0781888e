"""Errors of the KFP adapter and the import guard for the ``[kfp]`` extra."""

from __future__ import annotations

from types import ModuleType

__all__ = ["LAUNCHER_HINT", "TorchXKfpAppError", "import_kfp", "unsupported"]

LAUNCHER_HINT = "run it through the launcher instead: torchx_kfp.launcher_from_app(app, ...)"


class TorchXKfpAppError(RuntimeError):
    """A launcher task's TorchX app ended FAILED or CANCELLED (or vanished).

    Args:
        message: the summary line and the app's formatted status.
        app_handle: the app handle.
    """

    def __init__(self, message: str, app_handle: str) -> None:
        super().__init__(message)
        self.app_handle = app_handle


def unsupported(app_name: str, field: str, what: str) -> ValueError:
    """Returns the ValueError for an AppDef field that one KFP task cannot express.

    Args:
        app_name: the AppDef's name.
        field: the field, e.g. ``Role.port_map``.
        what: what the field holds and why one task cannot express it.
    """
    return ValueError(
        f"app `{app_name}`: {field} {what}; one KFP task runs one container, so {LAUNCHER_HINT}"
    )


def import_kfp() -> ModuleType:
    """Imports ``kfp`` or raises an ImportError that names the extra to install."""
    try:
        import kfp  # lazy: only here can a missing kfp get the line naming the extra
    except ImportError as e:
        raise ImportError(
            "torchx_kfp needs the Kubeflow Pipelines SDK: pip install 'torchx-flow[kfp]'"
        ) from e
    return kfp
