"""The exception a ``TorchXOperator`` task fails with when its app does not succeed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from torchx_airflow.version_compat import AirflowException

if TYPE_CHECKING:
    from torchx.specs.api import AppStatus

__all__ = ["TorchXAppError"]


class TorchXAppError(AirflowException):
    """The TorchX app ended FAILED or CANCELLED, or vanished; the message carries its error.

    Args:
        message: the summary line and the app's formatted status.
        app_handle: the app handle.
        status: the final status (None when the app vanished or in deferrable mode's error
            events).
    """

    def __init__(self, message: str, app_handle: str, status: Optional[AppStatus] = None) -> None:
        super().__init__(message)
        self.app_handle = app_handle
        self.status = status
