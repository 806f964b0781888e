"""What ``describe`` says about a JobSet app: state, reasons, Kueue, the startup timeout.

The reasons are the plain mode's (``plain_status``, ``_kubernetes.waiting``): image pull
errors, unschedulable pods with the scheduler's message, ``CreateContainerConfigError``, a
failed container's exit code and reason (``OOMKilled``), plus Kueue's admission state and
evictions (``_kubernetes.kueue``). A replica that has waited with a reason for longer than the
app's ``startup_timeout`` (from the moment its Job started: Kueue's queueing does not count)
makes the app FAILED with that reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

from torchx.schedulers._kubernetes.jobset import ANNOTATION_STARTUP_TIMEOUT
from torchx.schedulers._kubernetes.jobset_status import (
    JobSetView,
    jobset_condition,
    jobset_state,
    stopped,
)
from torchx.schedulers._kubernetes.plain_status import (
    ReplicaView,
    failure,
    replica_errors,
    role_statuses,
    waiting_status,
)
from torchx.schedulers._kubernetes.waiting import events_reader
from torchx.specs.api import NONE, AppState, RoleStatus, is_terminal

__all__ = [
    "ANNOTATION_STOPPED_REASON",
    "STARTUP_FAILED",
    "Summary",
    "jobset_summary",
    "plain_startup",
    "startup_expired",
]

ANNOTATION_STOPPED_REASON = "torchx.pytorch.org/stopped-reason"
"""Why the scheduler stopped the app (the startup timeout's reason)."""
STARTUP_FAILED = "not started within startup_timeout="


@dataclass
class Summary:
    """``describe``'s state, message, structured error and replica statuses."""

    state: AppState
    msg: str
    error: str
    roles_statuses: list[RoleStatus]


def startup_expired(
    timeout: float, started: Sequence[float], reason: str, now: float
) -> Optional[str]:
    """The failure message when replicas waited with ``reason`` past ``timeout``, else None.

    Args:
        timeout: seconds (0: no limit).
        started: when the app's Jobs started (epoch seconds; empty: not started).
        reason: why replicas wait (NONE: no reason, so no failure).
        now: the current time.
    """
    if timeout <= 0 or reason == NONE or not started or now - min(started) <= timeout:
        return None
    return f"{STARTUP_FAILED}{timeout:g}s: {reason}"


def plain_startup(jobs: Sequence[Any], reason: str, now: float) -> Optional[str]:
    """:func:`startup_expired` for plain Jobs (their annotation; None while Kueue holds one)."""
    if any(j.spec.suspend for j in jobs):
        return None
    meta = {"annotations": jobs[0].metadata.annotations} if jobs else {}
    return startup_expired(_timeout(meta), _started(jobs), reason, now)


def _timeout(obj_meta: dict[str, Any]) -> float:
    try:
        return float((obj_meta.get("annotations") or {}).get(ANNOTATION_STARTUP_TIMEOUT, 0))
    except ValueError:
        return 0.0


def _started(jobs: Sequence[Any]) -> list[float]:
    return [j.status.start_time.timestamp() for j in jobs if j.status and j.status.start_time]


def _waiting(views: Sequence[ReplicaView], core: Any, namespace: str) -> tuple[str, dict[int, str]]:
    known = [i for i, v in enumerate(views) if v.job is not None]
    msg, errors = waiting_status([views[i] for i in known], events_reader(core, namespace))
    return msg, {known[j]: e for j, e in errors.items()}


def jobset_summary(
    jobset: dict[str, Any],
    view: JobSetView,
    jobs: Sequence[Any],
    queued: tuple[Optional[bool], str],
    core: Any,
    now: float,
) -> Summary:
    """Describe a JobSet app (see the module docstring).

    Args:
        jobset: the JobSet.
        view: its replicas and roles.
        jobs: its child Jobs.
        queued: ``kueue.workload_note`` of the app (``(None, "")`` without Kueue).
        core: a ``CoreV1Api`` (events of waiting pods).
        now: the current time.
    """
    views = view.replicas
    state = jobset_state(jobset, [v.state for v in views])
    admitted, kueue_note = queued
    msg, error = NONE, NONE
    errors = replica_errors(views)
    meta = jobset["metadata"]
    if is_terminal(state):
        known = [v for v in views if v.job is not None]
        msg, error = failure(known)
        failed = jobset_condition(jobset, "Failed")
        if error == NONE and failed is not None:
            msg = f"JobSet failed ({failed.get('reason')}): {failed.get('message')}"
        if stopped(jobset) == "startup-timeout":
            msg = str((meta.get("annotations") or {}).get(ANNOTATION_STOPPED_REASON) or msg)
    else:
        msg, waiting = _waiting(views, core, jobset["metadata"]["namespace"])
        errors.update(waiting)
        expired = (
            None if admitted is False else startup_expired(_timeout(meta), _started(jobs), msg, now)
        )
        if expired:
            state, msg = AppState.FAILED, expired
    if kueue_note and not is_terminal(state):
        msg = kueue_note if msg == NONE else f"{kueue_note}; {msg}"
    return Summary(state, msg, error, role_statuses(views, errors))
