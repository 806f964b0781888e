"""Why a Kubernetes replica is not running: pod conditions, container waits, events (both modes).

Pure functions on ``kubernetes.client`` models. A replica that is PENDING says why, in this
order:

1. a container (init containers first) waits for a reason other than the normal
   ``ContainerCreating``/``PodInitializing``: ``ErrImagePull``, ``ImagePullBackOff``,
   ``InvalidImageName``, ``CreateContainerConfigError``, ... with the kubelet's message;
2. the pod's ``PodScheduled`` condition is False: ``Unschedulable: 0/1 nodes are available:
   1 Insufficient cpu.``;
3. else the newest ``Warning`` event of its pod (of its Job while it has no pod), e.g.
   ``FailedMount`` or the Job controller's ``FailedCreate``; events cost one API call per
   object, so the caller reads them only for a few PENDING replicas without a pod reason.
   In the moment between the scheduler's ``FailedScheduling`` event and its write of the
   ``PodScheduled`` condition, an unschedulable pod is explained by that event (same message).

``describe`` puts the reasons into ``AppStatus.msg`` (:func:`pending_message`) and each waiting
replica's ``structured_error_msg`` (:func:`waiting_error`, the flat schema without exit code).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Optional

__all__ = [
    "MAX_EVENT_READS",
    "EventReader",
    "event_reason",
    "events_reader",
    "pending_message",
    "pod_reason",
    "replica_reasons",
    "waiting_error",
]

NORMAL_WAITS = frozenset({"ContainerCreating", "PodInitializing"})
"""Container waiting reasons of a pod that is starting normally."""

MAX_EVENT_READS = 2
"""At most this many event lists per ``describe`` (PENDING replicas without a pod reason)."""

_MAX_CHARS = 300  # per reason (the kubelet's pull errors can be long)
_MAX_LISTED = 3  # replicas named in AppStatus.msg


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _MAX_CHARS else line[: _MAX_CHARS - 3] + "..."


def _join(reason: Optional[str], message: Optional[str]) -> str:
    parts = [p.strip() for p in (reason, message) if p and p.strip()]
    return _one_line(": ".join(parts))


def _scheduled(pod: Any) -> bool:
    conditions = (pod.status.conditions if pod.status is not None else None) or []
    return any(c.type == "PodScheduled" and c.status == "True" for c in conditions)


def pod_reason(pod: Any) -> str:
    """Why a pod's container does not run (a waiting reason or unschedulable), else ``""``.

    Args:
        pod: a ``V1Pod``.
    """
    status = pod.status
    if status is None:
        return ""
    containers = [*(status.init_container_statuses or []), *(status.container_statuses or [])]
    for container in containers:
        waiting = container.state.waiting if container.state is not None else None
        if waiting is not None and waiting.reason and waiting.reason not in NORMAL_WAITS:
            return _join(waiting.reason, waiting.message)
    for condition in status.conditions or []:
        if condition.type == "PodScheduled" and condition.status == "False":
            return _join(condition.reason or "Unschedulable", condition.message)
    return ""


def _event_time(event: Any) -> float:
    for stamp in (event.last_timestamp, event.event_time, event.metadata.creation_timestamp):
        if stamp is not None:
            return float(stamp.timestamp())
    return 0.0


def event_reason(events: Iterable[Any], scheduled: bool = False) -> str:
    """``reason: message`` of the newest ``Warning`` event, else ``""``.

    Args:
        events: ``CoreV1Event`` objects of one pod or Job.
        scheduled: the pod is scheduled (its earlier ``FailedScheduling`` events are stale).
    """
    warnings = [
        e
        for e in events
        if e.type == "Warning" and not (scheduled and e.reason == "FailedScheduling")
    ]
    if not warnings:
        return ""
    newest = max(warnings, key=_event_time)
    return _join(newest.reason, newest.message)


EventReader = Callable[[str, str], Iterable[Any]]
"""``(kind, name)`` -> the events of that object (``CoreV1Event``)."""


def events_reader(core: Any, namespace: str) -> EventReader:
    """An :data:`EventReader` over ``CoreV1Api.list_namespaced_event`` (one call per object)."""

    def read(kind: str, name: str) -> list[Any]:
        selector = f"involvedObject.kind={kind},involvedObject.name={name}"
        return list(core.list_namespaced_event(namespace, field_selector=selector).items)

    return read


def replica_reasons(
    pending: Sequence[tuple[Optional[Any], str, str]], read_events: EventReader
) -> dict[int, str]:
    """The reason of each PENDING replica that has one.

    Args:
        pending: per PENDING replica, ``(its newest V1Pod or None, kind, name)`` of the object
            whose events explain it (its pod, else its Job or Volcano Job).
        read_events: reads an object's events (called at most ``MAX_EVENT_READS`` times, for
            replicas whose pod gives no reason).

    Returns:
        ``{index into pending: reason}``.
    """
    out: dict[int, str] = {}
    reads = 0
    for i, (pod, kind, name) in enumerate(pending):
        reason = pod_reason(pod) if pod is not None else ""
        if not reason and reads < MAX_EVENT_READS:
            reads += 1
            scheduled = pod is not None and _scheduled(pod)
            reason = event_reason(read_events(kind, name), scheduled)
        if reason:
            out[i] = reason
    return out


def pending_message(reasons: Sequence[tuple[str, str]]) -> str:
    """``AppStatus.msg`` for waiting replicas: ``worker[1] Unschedulable: ...; ...``.

    Args:
        reasons: ``(replica label such as "worker[1]", reason)``, in replica order.
    """
    shown = [f"{label} {reason}" for label, reason in reasons[:_MAX_LISTED]]
    more = len(reasons) - _MAX_LISTED
    return "; ".join(shown) + (f" (and {more} more waiting)" if more > 0 else "")


def waiting_error(reason: str) -> str:
    """A waiting replica's ``structured_error_msg``: flat schema, no exit code or timestamp."""
    return json.dumps({"message": reason})
