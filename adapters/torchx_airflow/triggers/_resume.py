"""The trigger's event for a followed app, and the resumed task's result from it.

:func:`result_payload` turns the trigger's ``FollowResult`` into its one JSON event (with the
deadline flags and how many log lines of each replica the trigger logged);
:func:`resumed_result` is what ``execute_complete`` does with it: the app's final result
(never waiting for an app the deadline kept running) and the log lines the trigger did not
show (none are shown twice).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from torchx.runner.api import Runner
from torchx.runner.follow import FollowResult, follow
from torchx_airflow._status import event_payload, failure_message

__all__ = ["LOG_PREFIX", "result_payload", "resumed_result"]

LOG_PREFIX = "[{role}/{replica}] "
"""The prefix of replica lines in the task log (worker and trigger)."""

_CATCH_UP = 30.0  # seconds the resumed task reads the lines the trigger did not show


def result_payload(result: FollowResult) -> dict[str, Any]:
    """The trigger event of an app the trigger followed to its end (or deadline)."""
    payload = event_payload(result.app_handle, result.status)
    if not result.succeeded:
        payload["message"] = failure_message(
            result.app_handle,
            result.status,
            result.tails,
            deadline_expired=result.deadline_expired,
            startup_reason=result.startup_reason,
        )
    payload["deadline_expired"] = result.deadline_expired
    payload["startup_reason"] = result.startup_reason
    payload["cancelled"] = result.cancelled
    payload["logs_shown"] = dict(result.logs_shown)
    return payload


def resumed_result(
    runner: Runner,
    event: Mapping[str, Any],
    *,
    on_log: Callable[[str], None],
    stream_logs: bool,
    wait_interval: float = 5.0,
) -> FollowResult:
    """The result of the app a trigger event reports, showing the log lines not shown yet.

    The app ended (or its deadline passed: it is not awaited again). With ``stream_logs``,
    the lines of each replica after the ``logs_shown`` the trigger reported are passed to
    ``on_log``, ``[role/k]``-prefixed (all of them when the trigger logged none).

    Args:
        runner: a runner for the app's scheduler.
        event: the trigger's event (``app_handle``, ``deadline_expired``, ``startup_reason``,
            ``cancelled``, ``logs_shown``).
        on_log: receives each prefixed line.
        stream_logs: show the lines not shown yet.
        wait_interval: the longest time between status checks.
    """
    handle = str(event.get("app_handle", ""))
    shown = event.get("logs_shown")
    kept = (event.get("deadline_expired") or event.get("startup_reason")) and not event.get(
        "cancelled"
    )
    stream = stream_logs and not kept  # a kept app's logs go on: not followed here
    result = follow(
        runner,
        handle,
        on_log=on_log if stream else None,
        log_prefix=LOG_PREFIX,
        timeout=_CATCH_UP if stream else 0.0,  # the app ended, or was kept at its deadline
        cancel_at_deadline=False,
        cancel_on_failure=False,
        wait_interval=wait_interval,
        log_skip={str(k): int(v) for k, v in shown.items()} if isinstance(shown, dict) else None,
    )
    return dataclasses.replace(
        result,
        deadline_expired=bool(event.get("deadline_expired")) or result.deadline_expired,
        startup_reason=str(event.get("startup_reason") or ""),
        cancelled=bool(event.get("cancelled")),
    )
