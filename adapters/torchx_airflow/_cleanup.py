"""What happens to an app when its task ends, times out or fails; deadlines.

``on_finish_action`` (KubernetesPodOperator's name):

- ``cancel`` (default): an app still running when the task fails (a deadline, a trigger error,
  any exception while the app is alive, a kill) is cancelled; a finished app is left as is;
- ``keep``: nothing is cancelled or deleted (the app keeps running; a retry re-attaches);
- ``delete``: like ``cancel``, and every app is deleted once the task is done with it
  (``Runner.delete``: Kubernetes Jobs and pods, Docker containers and network).

No Airflow import.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING, Any, Optional

from torchx_airflow._runopts import AIRFLOW_SECRET_ENV

if TYPE_CHECKING:
    from torchx.runner.api import Runner

__all__ = [
    "AIRFLOW_SECRET_ENV",
    "ON_FINISH_ACTIONS",
    "check_on_finish_action",
    "finish_app",
    "remaining_seconds",
    "stop_app",
]

ON_FINISH_ACTIONS = ("cancel", "keep", "delete")


def check_on_finish_action(value: str, task_id: str) -> str:
    """Returns ``value`` if it is an ``on_finish_action``, else raises one clear line."""
    if value not in ON_FINISH_ACTIONS:
        raise ValueError(
            f"TorchXOperator `{task_id}`: on_finish_action must be one of"
            f" {', '.join(ON_FINISH_ACTIONS)}, got {value!r}"
        )
    return value


def stop_app(runner: Runner, app_handle: str, action: str, log: logging.Logger | Any) -> None:
    """The task failed while the app may be alive: cancel (or delete) it unless ``keep``.

    Never raises: the task's own error is what the user must see.
    """
    if action == "keep":
        log.info("on_finish_action=keep: TorchX app %s is left running", app_handle)
        return
    try:
        status = runner.status(app_handle)
        if action == "delete":
            log.info("deleting TorchX app %s (on_finish_action=delete)", app_handle)
            runner.delete(app_handle)
        elif status is not None and not status.is_terminal():
            log.info("cancelling TorchX app %s (on_finish_action=cancel)", app_handle)
            runner.cancel(app_handle)
    except Exception as e:
        log.warning("could not stop TorchX app %s: %s: %s", app_handle, type(e).__name__, e)


def finish_app(runner: Runner, app_handle: str, action: str, log: logging.Logger | Any) -> None:
    """The task is done with an app that ended: delete it for ``delete``; never raises."""
    if action != "delete":
        return
    try:
        log.info("deleting TorchX app %s (on_finish_action=delete)", app_handle)
        runner.delete(app_handle)
    except Exception as e:
        log.warning("could not delete TorchX app %s: %s: %s", app_handle, type(e).__name__, e)


def remaining_seconds(
    execution_timeout: Optional[dt.timedelta], start: Optional[dt.datetime]
) -> Optional[float]:
    """Returns what is left of the task's ``execution_timeout`` (None: no timeout).

    Airflow 3.3 does not apply ``execution_timeout`` to a deferred task: the operator passes
    this as the deferral's ``timeout=`` and as the worker wait's deadline. At least 1 second.

    Args:
        execution_timeout: the task's timeout.
        start: when the try started (``ti.start_date``; None: now).
    """
    if execution_timeout is None:
        return None
    total = execution_timeout.total_seconds()
    if start is None:
        return max(total, 1.0)
    if start.tzinfo is None:
        start = start.replace(tzinfo=dt.UTC)
    elapsed = (dt.datetime.now(dt.UTC) - start).total_seconds()
    return max(total - elapsed, 1.0)
