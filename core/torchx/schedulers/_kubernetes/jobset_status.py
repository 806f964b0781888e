"""Jobset-mode state: a JobSet, its child Jobs and their pods -> app and replica states.

The JobSet's own ``Completed``/``Failed`` conditions decide SUCCEEDED/FAILED; a JobSet the
scheduler cancelled (``stopped: cancelled`` and ``suspend``) reads CANCELLED; otherwise the
replicas decide (``plain_status.app_state``). A replica is one completion index of its role's
Job: its newest pod with that index, its state from the Job and the pod as in plain mode.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Optional

from torchx.schedulers._kubernetes.names import LABEL_ROLE_INDEX, LABEL_ROLE_NAME
from torchx.schedulers._kubernetes.plain import ANNOTATION_STOPPED
from torchx.schedulers._kubernetes.plain_status import ReplicaView, app_state, replica_state
from torchx.specs.api import AppState, Role

__all__ = [
    "ROLE_JOB_LABEL",
    "JobSetView",
    "jobset_condition",
    "jobset_state",
    "jobset_views",
    "stopped",
]

ROLE_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"


@dataclass(frozen=True)
class JobSetView:
    """The replicas of a JobSet (role order, then index) and its roles."""

    replicas: list[ReplicaView]
    roles: list[Role]


def stopped(jobset: dict[str, Any]) -> Optional[str]:
    """The ``stopped`` annotation of the JobSet (``cancelled``, ``startup-timeout``) or None."""
    value = (jobset.get("metadata", {}).get("annotations") or {}).get(ANNOTATION_STOPPED)
    return str(value) if value else None


def jobset_condition(jobset: dict[str, Any], kind: str) -> Optional[dict[str, Any]]:
    """The JobSet's condition ``kind`` when it is True, else None."""
    for cond in (jobset.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind and cond.get("status") == "True":
            return dict(cond)
    return None


def _newest(pods: Iterable[Any]) -> dict[tuple[str, int], Any]:
    out: dict[tuple[str, int], Any] = {}
    for pod in sorted(pods, key=lambda p: p.metadata.creation_timestamp.timestamp()):
        labels = pod.metadata.labels or {}
        job, index = labels.get("job-name"), labels.get(_INDEX_LABEL)
        if job and index is not None:
            out[(job, int(index))] = pod
    return out


def jobset_views(jobset: dict[str, Any], jobs: list[Any], pods: list[Any]) -> JobSetView:
    """Pair each replica (role's Job, completion index) with its Job and newest pod.

    A role whose Job does not exist yet (just created, or recreated on a restart) has replicas
    with neither Job nor pod; they read PENDING.
    """
    by_role = {(j.metadata.labels or {}).get(ROLE_JOB_LABEL): j for j in jobs}
    newest = _newest(pods)
    views, roles = [], []
    for rjob in jobset["spec"]["replicatedJobs"]:
        spec = rjob["template"]["spec"]
        labels = spec["template"]["metadata"].get("labels") or {}
        role, role_idx = (
            str(labels.get(LABEL_ROLE_NAME, rjob["name"])),
            int(labels.get(LABEL_ROLE_INDEX, 0)),
        )
        containers = spec["template"]["spec"].get("containers") or [{}]
        count = int(spec.get("completions") or 1)
        roles.append(Role(name=role, image=str(containers[0].get("image", "")), num_replicas=count))
        job = by_role.get(rjob["name"])
        for k in range(count):
            pod = newest.get((job.metadata.name, k)) if job is not None else None
            state = _replica_state(job, pod, k)
            views.append(ReplicaView(role_idx, role, k, job, pod, state))
    return JobSetView(views, roles)


def _replica_state(job: Optional[Any], pod: Optional[Any], k: int) -> AppState:
    if job is None:
        return AppState.PENDING
    failed = set(_indexes((job.status and job.status.failed_indexes) or ""))
    if k in failed:
        return AppState.FAILED
    done = set(_indexes((job.status and job.status.completed_indexes) or ""))
    if k in done:
        return AppState.SUCCEEDED
    state = replica_state(job, pod)
    if state == AppState.SUCCEEDED and pod is not None and pod.status.phase != "Succeeded":
        return AppState.RUNNING
    return state


def _indexes(text: str) -> Iterable[int]:
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        yield from range(int(low), int(high or low) + 1)


def jobset_state(jobset: dict[str, Any], replica_states: list[AppState]) -> AppState:
    """The app's state: the JobSet's conditions first, then the replicas'."""
    if jobset_condition(jobset, "Completed"):
        return AppState.SUCCEEDED
    if jobset_condition(jobset, "Failed") or stopped(jobset) == "startup-timeout":
        return AppState.FAILED
    if stopped(jobset) == "cancelled":
        return AppState.CANCELLED
    if (jobset.get("spec") or {}).get("suspend"):
        return AppState.PENDING
    states = [AppState.PENDING if s == AppState.FAILED else s for s in replica_states]
    # a failed replica under a JobSet that has not failed is being restarted
    return app_state(states)
