"""Plain-mode state: ``batch/v1`` Jobs and their pods -> replica and app states (pure functions).

A replica's state comes from its Job first (``Complete``/``Failed`` conditions, the scheduler's
``stopped`` annotation), then from its newest pod's phase; a PENDING replica says why it waits
(:func:`waiting_status`). The app is FAILED when any replica
failed, CANCELLED when it was cancelled, SUCCEEDED when every replica succeeded, RUNNING when
any runs, else PENDING. A failed replica's structured error is TorchX's flat JSON schema
(``message``, ``errorCode``, ``timestamp``) built from its container's termination state: the
message the container wrote to ``/dev/termination-log``, or else the last lines of its log.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from torchx.schedulers._kubernetes.names import (
    LABEL_REPLICA_ID,
    LABEL_ROLE_INDEX,
    LABEL_ROLE_NAME,
    LABEL_UNIQUE_NAME,
)
from torchx.schedulers._kubernetes.plain import ANNOTATION_STOPPED
from torchx.schedulers._kubernetes.waiting import (
    EventReader,
    pending_message,
    replica_reasons,
    waiting_error,
)
from torchx.specs.api import NONE, AppState, ReplicaStatus, Role, RoleStatus

__all__ = [
    "ReplicaView",
    "app_state",
    "failure",
    "num_restarts",
    "replica_errors",
    "replica_state",
    "replica_views",
    "role_statuses",
    "roles",
    "waiting_status",
]


@dataclass(frozen=True)
class ReplicaView:
    """One replica as the API server shows it: its Job and its newest pod (or None)."""

    role_idx: int
    role: str
    replica_id: int
    job: Any
    pod: Optional[Any]
    state: AppState


def _condition(job: Any, kind: str) -> bool:
    return any(
        c.type == kind and c.status == "True" for c in (job.status and job.status.conditions) or []
    )


def _pod_state(job: Any, pod: Optional[Any]) -> AppState:
    phase = pod.status.phase if pod is not None and pod.status else None
    if phase == "Running":
        return AppState.RUNNING
    if phase == "Succeeded":
        return AppState.SUCCEEDED
    if phase == "Failed":
        failed = (job.status and job.status.failed) or 0
        # a Job with retries left starts a new pod: that is a restart, not a failure
        return AppState.FAILED if failed > (job.spec.backoff_limit or 0) else AppState.PENDING
    return AppState.PENDING


def replica_state(job: Any, pod: Optional[Any]) -> AppState:
    """The state of one replica.

    Args:
        job: its ``V1Job``.
        pod: its newest ``V1Pod``, or None.

    Returns:
        SUCCEEDED / FAILED from the Job's conditions, CANCELLED when the scheduler stopped it,
        else from the pod's phase.
    """
    if _condition(job, "Complete"):
        return AppState.SUCCEEDED
    stopped = (job.metadata.annotations or {}).get(ANNOTATION_STOPPED)
    if stopped:
        return AppState.FAILED if stopped == "startup-timeout" else AppState.CANCELLED
    if _condition(job, "Failed"):
        return AppState.FAILED
    return _pod_state(job, pod)


def _created(obj: Any) -> float:
    stamp = obj.metadata.creation_timestamp
    return stamp.timestamp() if stamp is not None else 0.0


def _age_key(pod: Any) -> tuple[float, int]:
    # creation timestamps have one-second resolution: a retry's pod is often created in the
    # same second as the failed pod it replaces, so a tie goes to the pod that has not failed
    phase = pod.status.phase if pod.status is not None else None
    return _created(pod), 0 if phase == "Failed" else 1


def newest_pods(pods: Iterable[Any]) -> dict[str, Any]:
    """``{job name: its newest pod}`` (pods carry the ``job-name`` label)."""
    out: dict[str, Any] = {}
    for pod in sorted(pods, key=_age_key):
        job = (pod.metadata.labels or {}).get("job-name")
        if job:
            out[job] = pod
    return out


def replica_views(jobs: Iterable[Any], pods: Iterable[Any]) -> list[ReplicaView]:
    """Pair each Job with its newest pod, ordered by role index then replica id."""
    by_job = newest_pods(pods)
    views = []
    for job in jobs:
        labels = job.metadata.labels or {}
        pod = by_job.get(job.metadata.name)
        views.append(
            ReplicaView(
                role_idx=int(labels.get(LABEL_ROLE_INDEX, 0)),
                role=labels.get(LABEL_ROLE_NAME, ""),
                replica_id=int(labels.get(LABEL_REPLICA_ID, 0)),
                job=job,
                pod=pod,
                state=replica_state(job, pod),
            )
        )
    return sorted(views, key=lambda v: (v.role_idx, v.replica_id))


def app_state(states: Sequence[AppState], cancelled: bool = False) -> AppState:
    """The app's state from its replicas' states.

    Args:
        states: every replica's state.
        cancelled: the app was cancelled (some Job carries ``stopped=cancelled``).

    Returns:
        FAILED if any failed; CANCELLED if cancelled (or any replica was); SUCCEEDED if all
        succeeded; RUNNING if any runs; else PENDING (UNKNOWN without replicas).
    """
    if not states:
        return AppState.UNKNOWN
    if AppState.FAILED in states:
        return AppState.FAILED
    if cancelled or AppState.CANCELLED in states:
        return AppState.CANCELLED
    if all(s == AppState.SUCCEEDED for s in states):
        return AppState.SUCCEEDED
    if AppState.RUNNING in states or AppState.SUCCEEDED in states:
        return AppState.RUNNING
    return AppState.PENDING


def _terminated(pod: Optional[Any]) -> Optional[Any]:
    if pod is None or pod.status is None:
        return None
    for status in pod.status.container_statuses or []:
        state = status.state
        if state is not None and state.terminated is not None and state.terminated.exit_code:
            return state.terminated
    return None


def failure(views: Sequence[ReplicaView]) -> tuple[str, str]:
    """``(msg, structured error JSON)`` of the first replica that failed, or ``(NONE, NONE)``.

    The first failure is the one with the earliest container finish time; replicas the
    scheduler stopped because of it are not candidates.
    """
    failed = []
    for view in views:
        term = _terminated(view.pod)
        if view.state == AppState.FAILED and term is not None:
            failed.append((term.finished_at.timestamp() if term.finished_at else 0.0, view, term))
    if not failed:
        for view in views:
            if view.state == AppState.FAILED:
                return f"{view.role}[{view.replica_id}] failed: {_job_reason(view.job)}", NONE
        return NONE, NONE
    _, view, term = min(failed, key=lambda item: item[0])
    msg = f"{view.role}[{view.replica_id}] exited with code {term.exit_code} ({term.reason})"
    return msg, _error_json(term)


def _error_json(term: Any) -> str:
    message = (term.message or "").strip() or f"exited with code {term.exit_code}"
    finished = term.finished_at.timestamp() if term.finished_at else 0.0
    return json.dumps({"message": message, "errorCode": term.exit_code, "timestamp": int(finished)})


def replica_errors(views: Sequence[ReplicaView]) -> dict[int, str]:
    """Each failed replica's own structured error, by index into ``views``."""
    errors = {}
    for i, view in enumerate(views):
        term = _terminated(view.pod)
        if view.state == AppState.FAILED and term is not None:
            errors[i] = _error_json(term)
    return errors


def waiting_status(
    views: Sequence[ReplicaView], read_events: EventReader
) -> tuple[str, dict[int, str]]:
    """Why the PENDING replicas wait (see ``_kubernetes.waiting``).

    Args:
        views: the replicas.
        read_events: reads an object's events (pod, else Job; a few calls at most).

    Returns:
        ``(AppStatus.msg or NONE, {index into views: structured error})``.
    """
    pending = [i for i, view in enumerate(views) if view.state == AppState.PENDING]
    objects = []
    for i in pending:
        pod = views[i].pod
        obj = pod if pod is not None else views[i].job
        objects.append((pod, "Pod" if pod is not None else "Job", str(obj.metadata.name)))
    found = replica_reasons(objects, read_events)
    labeled = [
        (f"{views[pending[j]].role}[{views[pending[j]].replica_id}]", reason)
        for j, reason in sorted(found.items())
    ]
    errors = {pending[j]: waiting_error(reason) for j, reason in found.items()}
    return pending_message(labeled) or NONE, errors


def num_restarts(views: Sequence[ReplicaView]) -> int:
    """The most restarts of any replica: its Job's failed pods, less the final failure."""
    restarts = [
        ((v.job.status and v.job.status.failed) or 0) - (v.state == AppState.FAILED) for v in views
    ]
    return max([0, *restarts])


def _job_reason(job: Any) -> str:
    detail = (job.metadata.annotations or {}).get("torchx.pytorch.org/stopped-reason")
    if detail:
        return str(detail)
    for c in (job.status and job.status.conditions) or []:
        if c.type == "Failed" and c.status == "True":
            return f"{c.reason}: {c.message}"
    return "unknown reason"


def _hostname(view: ReplicaView) -> str:
    pod = view.pod
    if pod is None or pod.status is None:
        return ""
    return str(pod.status.pod_ip or "")


def role_statuses(views: Sequence[ReplicaView], errors: Mapping[int, str]) -> list[RoleStatus]:
    """One ``RoleStatus`` per role (role order), replicas by id; hostnames are pod IPs.

    Args:
        views: the replicas.
        errors: structured error by index into ``views``.
    """
    roles: dict[str, RoleStatus] = {}
    for i, view in enumerate(views):
        status = roles.setdefault(view.role, RoleStatus(view.role, []))
        status.replicas.append(
            ReplicaStatus(
                id=view.replica_id,
                state=view.state,
                role=view.role,
                hostname=_hostname(view),
                structured_error_msg=errors.get(i, NONE),
            )
        )
    return list(roles.values())


def roles(views: Sequence[ReplicaView]) -> list[Role]:
    """The app's roles as far as the cluster shows them: name, image and replica count."""
    found: dict[str, Role] = {}
    for view in views:
        if view.role not in found:
            containers = view.job.spec.template.spec.containers or []
            image = containers[0].image if containers else ""
            found[view.role] = Role(name=view.role, image=image, num_replicas=0)
        found[view.role].num_replicas += 1
    return list(found.values())


def app_names(jobs: Iterable[Any]) -> dict[str, list[Any]]:
    """Group Jobs by app (the ``app.kubernetes.io/instance`` label), in first-seen order."""
    apps: dict[str, list[Any]] = {}
    for job in jobs:
        name = (job.metadata.labels or {}).get(LABEL_UNIQUE_NAME)
        if name:
            apps.setdefault(name, []).append(job)
    return apps
