"""App status -> XCom result, trigger event payload and failure messages (no Airflow import)."""

from __future__ import annotations

from typing import Any, Optional

from torchx.runner.follow import failure_message as core_message
from torchx.specs.api import AppStatus, parse_app_handle

__all__ = ["event_payload", "failure_message", "xcom_result"]


def _app_id(app_handle: str) -> str:
    return parse_app_handle(app_handle).app_id


def xcom_result(app_handle: str, status: Optional[AppStatus]) -> dict[str, Any]:
    """Returns the task's XCom value: handle, app id, state name, UI URL and tracker run id.

    The tracker run id is the app handle: it is the ``TORCHX_JOB_ID`` of the app's replicas,
    the id ``torchx.tracker`` records runs under, and what downstream tasks pass as
    ``parent_run_id``.
    """
    return {
        "app_handle": app_handle,
        "app_id": _app_id(app_handle),
        "state": status.state.name if status is not None else "UNKNOWN",
        "ui_url": status.ui_url if status is not None else None,
        "tracker_run_id": app_handle,
    }


def failure_message(
    app_handle: str,
    status: Optional[AppStatus],
    tails: Optional[dict[str, list[str]]] = None,
    *,
    deadline_expired: bool = False,
    startup_reason: str = "",
) -> str:
    """Returns the message the task fails with: core's ``torchx.runner.follow`` message.

    A summary line (leading with the app's structured error), the app's status, then the last
    log lines of each failed replica; a vanished app's message says how to launch it again.
    """
    message = core_message(
        app_handle,
        status,
        tails,
        deadline_expired=deadline_expired,
        startup_reason=startup_reason,
    )
    if status is None:
        message = f"{message}; clear the task to launch it again"
    return message


def event_payload(app_handle: str, status: Optional[AppStatus], error: str = "") -> dict[str, Any]:
    """Returns a JSON-serializable trigger event for a terminal (or vanished) app.

    ``status`` is ``success`` when the app SUCCEEDED, ``failed`` when it ended otherwise or
    vanished, and ``error`` when the trigger itself could not follow the app.
    """
    if error:
        return {"status": "error", "app_handle": app_handle, "message": error}
    ok = status is not None and status.state.name == "SUCCEEDED"
    return {
        "status": "success" if ok else "failed",
        "app_handle": app_handle,
        "state": status.state.name if status is not None else "UNKNOWN",
        "message": "" if ok else failure_message(app_handle, status),
    }
