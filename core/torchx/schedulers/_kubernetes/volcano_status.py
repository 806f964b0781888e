"""Volcano Job status -> torchx states (``JOB_STATE``, ``TASK_STATE``, describe and list)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Optional

from torchx.schedulers._kubernetes.names import LABEL_KUBE_APP_NAME
from torchx.schedulers._kubernetes.waiting import pending_message, waiting_error
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse
from torchx.specs.api import (
    NONE,
    AppState,
    ReplicaState,
    ReplicaStatus,
    Role,
    RoleStatus,
    is_terminal,
)

__all__ = [
    "JOB_STATE",
    "TASK_STATE",
    "app_state",
    "describe_vcjob",
    "list_entry",
    "pod_hostname",
]

JOB_STATE: Mapping[str, AppState] = MappingProxyType(
    {
        "Pending": AppState.PENDING,  # queued, waiting for a scheduling decision
        "Aborting": AppState.RUNNING,  # aborted, pods being released
        "Aborted": AppState.CANCELLED,  # aborted by a user or by error handling
        "Running": AppState.RUNNING,  # at least minAvailable tasks run
        "Restarting": AppState.RUNNING,  # restarting, pods being recreated
        "Completing": AppState.RUNNING,
        "Completed": AppState.SUCCEEDED,
        "Terminating": AppState.RUNNING,  # ended unexpectedly, pods being released
        "Terminated": AppState.FAILED,
        "Failed": AppState.FAILED,  # (TorchX mapped it to ReplicaState.FAILED)
    }
)
"""Volcano Job phase -> ``AppState``; an unknown phase is ``UNKNOWN``."""

TASK_STATE: Mapping[str, ReplicaState] = MappingProxyType(
    {
        "Pending": ReplicaState.PENDING,
        "Allocated": ReplicaState.PENDING,
        "Pipelined": ReplicaState.PENDING,
        "Binding": ReplicaState.PENDING,
        "Bound": ReplicaState.PENDING,
        "Running": ReplicaState.RUNNING,
        "Releasing": ReplicaState.RUNNING,
        "Succeeded": ReplicaState.SUCCEEDED,
        "Failed": ReplicaState.FAILED,
        "Unknown": ReplicaState.UNKNOWN,
    }
)
"""Volcano task (pod) phase -> ``ReplicaState``; an unknown phase is ``UNKNOWN``."""

HostnameLookup = Callable[[str], str]
"""Pod name -> hostname (``""`` when unknown)."""


def app_state(vcjob: Mapping[str, Any]) -> AppState:
    """The app state of a Volcano Job object (``UNKNOWN`` without a status or phase)."""
    phase = ((vcjob.get("status") or {}).get("state") or {}).get("phase")
    return JOB_STATE.get(phase, AppState.UNKNOWN) if phase else AppState.UNKNOWN


def pod_hostname(pod_ip: str | None, namespace: str) -> str:
    """The cluster-DNS name of a pod IP (``10-0-0-1.{ns}.pod.cluster.local``), or ``""``."""
    if not pod_ip:
        return ""
    return f"{pod_ip.replace('.', '-')}.{namespace}.pod.cluster.local"


def _task_phase(task_status: Mapping[str, Any]) -> ReplicaState:
    phases = task_status.get("phase") or {}
    # a task has one pod; if counts disagree, the most advanced phase wins
    for phase in ("Failed", "Succeeded", "Running", "Releasing", "Unknown"):
        if phases.get(phase):
            return TASK_STATE[phase]
    for phase in phases:
        return TASK_STATE.get(phase, ReplicaState.UNKNOWN)
    return ReplicaState.UNKNOWN


def _spec_tasks(vcjob: Mapping[str, Any]) -> dict[str, str]:
    """Task name -> container image, in the Job spec's (the app's role) order."""
    tasks: dict[str, str] = {}
    for task in (vcjob.get("spec") or {}).get("tasks") or []:
        containers = ((task.get("template") or {}).get("spec") or {}).get("containers") or [{}]
        tasks[str(task.get("name", ""))] = str(containers[0].get("image", ""))
    return tasks


def describe_vcjob(
    app_id: str,
    vcjob: Mapping[str, Any],
    hostname: HostnameLookup,
    waiting: Optional[Mapping[str, str]] = None,
) -> DescribeAppResponse:
    """Describe a Volcano Job object.

    Replicas are the spec's tasks plus any other key of ``status.taskStatusCount``; a task is
    ``{role}-{replica}`` split at the last ``-``, so role names are the normalized ones (as in
    TorchX). A task without a count yet (its pod not created) is PENDING while the Job is not
    finished, else UNKNOWN.

    A PENDING replica whose pod is in ``waiting`` says why: in ``msg`` (after the Job's own
    message) and in its ``structured_error_msg`` (see ``_kubernetes.waiting``).

    Args:
        app_id: ``{namespace}:{name}``.
        vcjob: the Job object (as returned by the API server).
        hostname: looks up a pod's hostname by pod name.
        waiting: pod name -> why it waits (its replica's reason while PENDING).

    Returns:
        The description; ``UNKNOWN`` without a status.
    """
    name = vcjob.get("metadata", {}).get("name", app_id.partition(":")[2])
    status = vcjob.get("status") or {}
    state = app_state(vcjob)
    counts: Mapping[str, Any] = status.get("taskStatusCount") or {}
    images = _spec_tasks(vcjob)
    absent = ReplicaState.UNKNOWN if is_terminal(state) else ReplicaState.PENDING
    roles: dict[str, Role] = {}
    statuses: dict[str, RoleStatus] = {}
    reasons: list[tuple[str, str]] = []
    for task in [*images, *sorted(set(counts) - set(images), key=_task_sort_key)]:
        role, _, idx = task.rpartition("-")
        if role not in roles:
            roles[role] = Role(name=role, image=images.get(task, ""), num_replicas=0)
            statuses[role] = RoleStatus(role, [])
        roles[role].num_replicas += 1
        pod = f"{name}-{task}-0"  # = volcano_pod_name(name, role, idx)
        replica = ReplicaStatus(
            id=int(idx) if idx.isdigit() else 0,
            role=role,
            state=_task_phase(counts[task] or {}) if task in counts else absent,
            hostname=hostname(pod),
        )
        reason = (waiting or {}).get(pod) if replica.state == AppState.PENDING else None
        if reason:
            replica.structured_error_msg = waiting_error(reason)
            reasons.append((f"{role}[{replica.id}]", reason))
        statuses[role].replicas.append(replica)
    own = str((status.get("state") or {}).get("message") or "")
    msg = "; ".join(m for m in (own, pending_message(reasons)) if m)
    return DescribeAppResponse(
        app_id=app_id,
        state=state,
        num_restarts=int(status.get("retryCount") or 0),
        msg=msg or NONE,
        roles=list(roles.values()),
        roles_statuses=list(statuses.values()),
    )


def _task_sort_key(task: str) -> tuple[str, int]:
    role, _, idx = task.rpartition("-")
    return role, int(idx) if idx.isdigit() else -1


def list_entry(namespace: str, vcjob: Mapping[str, Any]) -> ListAppResponse:
    """One ``list`` entry for a Volcano Job object (the name from its pods' labels)."""
    name = vcjob["metadata"]["name"]
    tasks = (vcjob.get("spec") or {}).get("tasks") or [{}]
    labels = ((tasks[0].get("template") or {}).get("metadata") or {}).get("labels") or {}
    return ListAppResponse(
        app_id=f"{namespace}:{name}",
        state=app_state(vcjob),
        name=str(labels.get(LABEL_KUBE_APP_NAME, "")),
    )
