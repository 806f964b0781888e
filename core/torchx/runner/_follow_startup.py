"""When a followed app counts as started, and the startup timeout's reason (private)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from torchx.specs.options import NONE

if TYPE_CHECKING:
    from torchx.specs.api import AppStatus

__all__ = ["not_started", "started", "starting", "status_message"]


_NOT_STARTED = ("UNSUBMITTED", "SUBMITTED", "PENDING")


def starting(status: AppStatus) -> bool:
    """The app (or one of its replicas, while the app RUNS) waits to start."""
    if status.state.name in _NOT_STARTED:
        return True
    return status.state.name == "RUNNING" and any(
        rep.state.name in _NOT_STARTED for rs in status.roles for rep in rs.replicas
    )


def started(status: AppStatus) -> bool:
    """RUNNING with no replica waiting to start."""
    return status.state.name == "RUNNING" and not starting(status)


def not_started(status: AppStatus, timeout: Optional[float]) -> str:
    """``did not start within 30s (PENDING: <the scheduler's reason>)``."""
    why = status_message(status)
    state = status.state.name
    return f"did not start within {timeout:g}s ({state}{': ' + why if why else ''})"


def status_message(status: AppStatus) -> str:
    """The status message, ``""`` for none (``NONE`` or blank)."""
    msg = (status.msg or "").strip()
    return "" if msg == NONE else msg
