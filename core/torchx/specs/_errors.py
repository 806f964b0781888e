"""Exceptions of ``torchx.specs`` (re-exported from :mod:`torchx.specs.api`).

Every torchx exception derives from :class:`TorchXError`, so callers can catch
them all at once while the TorchX names keep working.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "TorchXError",
    "InvalidRunConfigException",
    "MalformedAppHandleException",
    "UnknownSchedulerException",
    "UnknownAppException",
]


class TorchXError(Exception):
    """Root of every torchx exception."""


class InvalidRunConfigException(TorchXError):
    """A scheduler run config (``cfg``) is missing an option or has a wrong type.

    Args:
        invalid_reason: what is wrong.
        cfg_key: the offending run option.
        cfg: the config that was given.
    """

    def __init__(self, invalid_reason: str, cfg_key: str, cfg: Mapping[str, Any] | None) -> None:
        given = cfg if cfg else "<EMPTY>"
        super().__init__(f"{invalid_reason}. Given: {given}")
        self.cfg_key = cfg_key


class MalformedAppHandleException(TorchXError):
    """An app handle is not of the form ``<scheduler_backend>://<session_name>/<app_id>``."""

    def __init__(self, app_handle: str) -> None:
        super().__init__(
            f"{app_handle} is not of the form: <scheduler_backend>://<session_name>/<app_id>"
        )


class UnknownSchedulerException(TorchXError):
    """No scheduler is registered under the given backend name."""

    def __init__(self, scheduler_backend: str) -> None:
        super().__init__(
            f"Scheduler backend: {scheduler_backend} does not exist."
            " Use session.scheduler_backends() to see all supported schedulers"
        )


class UnknownAppException(TorchXError):
    """The app handle does not name an app known to its scheduler."""

    def __init__(self, app_handle: str) -> None:
        super().__init__(
            f"Unknown app = {app_handle}. Did you forget to call session.run()?"
            " Otherwise, the app may have already finished and purged by the scheduler"
        )
