"""Keeps the app handle in the 3.3 ``task_state_store`` so a retried task finds its app again.

XComs are cleared at every try, the task state store is not: the handle written by the try
that launched the app is read back by the next try, which then waits on the live app instead
of launching a duplicate, reuses a SUCCEEDED app, or relaunches one that failed.
"""

from __future__ import annotations

import enum
import logging
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from torchx.specs.api import AppStatus

__all__ = ["STATE_KEY", "AppSlot", "Decision", "decide"]

STATE_KEY = "torchx_app_handle"


class Decision(enum.StrEnum):
    """What a try does with the app a previous try launched."""

    LAUNCH = "launch"
    REATTACH = "reattach"
    REUSE = "reuse"


def decide(status: Optional[AppStatus]) -> Decision:
    """Returns REATTACH for a live app, REUSE for a SUCCEEDED one, LAUNCH otherwise.

    Args:
        status: the previous app's status (None: no previous app, or it vanished).
    """
    if status is None:
        return Decision.LAUNCH
    if not status.is_terminal():
        return Decision.REATTACH
    return Decision.REUSE if status.state.name == "SUCCEEDED" else Decision.LAUNCH


class AppSlot:
    """The task instance's durable app handle (a no-op without a task state store).

    Args:
        store: ``context["task_state_store"]`` or None (Airflow < 3.3, or ``durable=False``).
        log: where to say that re-attach is unavailable.
        first_try: the task instance's first try: no earlier try can have stored a handle
            (a cleared or retried task instance has a higher try number), so :meth:`get`
            does not ask the store (one API round trip less per task).
    """

    def __init__(self, store: Any, log: logging.Logger | Any, first_try: bool = False) -> None:
        self._store = store
        self._first_try = first_try
        if store is None:
            log.info("no task_state_store: a retry of this task launches a new app")

    def get(self) -> Optional[str]:
        """Returns the handle a previous try stored, or None."""
        if self._store is None or self._first_try:
            return None
        value = self._store.get(STATE_KEY)
        return value if isinstance(value, str) and value else None

    def set(self, app_handle: str) -> None:
        """Stores ``app_handle`` for the next tries of this task instance."""
        if self._store is not None:
            self._store.set(STATE_KEY, app_handle)
