"""How a scheduler says that an app's submission has not finished, or never will.

A scheduler that creates an app with several API calls (``kubernetes`` in plain mode: a
Service, then one Job per replica) is left with part of the app when its submitter dies in
between. It reports such an app PENDING, its ``AppStatus.msg`` starting with
:data:`IN_PROGRESS`, while the submitter may still be running, then FAILED, its ``msg``
starting with :data:`HALF_CREATED`, once it cannot be. Whoever takes over an app of an earlier
process (the Airflow operator's retry) waits out the first and replaces the second, instead
of waiting on an app that will never start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from torchx.specs.api import AppState

if TYPE_CHECKING:
    from torchx.specs.api import AppStatus

__all__ = [
    "HALF_CREATED",
    "IN_PROGRESS",
    "half_created",
    "partial_state",
    "submission_in_progress",
]

IN_PROGRESS = "submission in progress: "
"""The start of the ``msg`` of a PENDING app whose submitter may still be creating it."""

HALF_CREATED = "app half-created: "
"""The start of the ``msg`` of a FAILED app whose submitter stopped before creating all of it."""


def submission_in_progress(status: Optional[AppStatus]) -> bool:
    """Whether ``status`` is of a PENDING app that is not fully created yet."""
    return (
        status is not None and status.state.name == "PENDING" and status.msg.startswith(IN_PROGRESS)
    )


def half_created(status: Optional[AppStatus]) -> bool:
    """Whether ``status`` is of a FAILED app whose submitter stopped before creating it all."""
    return (
        status is not None and status.state.name == "FAILED" and status.msg.startswith(HALF_CREATED)
    )


def partial_state(failed: bool, existing: AppState) -> AppState:
    """The state of an app not fully created, given the state its existing replicas make.

    Args:
        failed: submission cannot still be running (the app is half-created for good).
        existing: the state the replicas that exist make.

    Returns:
        FAILED when ``failed``; PENDING while the replicas that exist run, have ended well or
        read nothing (not every replica exists yet: the app has not started); else
        ``existing``.
    """
    if failed:
        return AppState.FAILED
    if existing in (AppState.RUNNING, AppState.SUCCEEDED, AppState.UNKNOWN):
        return AppState.PENDING
    return existing
