"""A plain-mode app whose submitter stopped before creating all its Jobs (half-created).

Submission creates the Service, then one Job per replica; with ``rank0_address=pod_ip`` rank 0's
Job first and, once its pod has an IP, the others. A submitter killed in between (a worker
``docker kill``-ed right after launch) leaves an app with some Jobs only, whose rank 0 waits for
peers that never come. So every Job and the Service record at submission
(:func:`submission_annotations`) how many Jobs the app has and when, at the latest, they all
exist:

- ``role-replicas``: ``{role}={n},...`` in role order;
- ``submitted-at``: when submission started (UTC, the submitter's clock);
- ``submit-wait``: the longest submission waits for rank 0's pod IP (``0`` with ``dns``);
- ``submit-margin``: how long the rest of submission takes at most (creating Jobs, clock skew).

An app with fewer Jobs than recorded (:func:`check`) is PENDING, its ``msg`` naming the replicas
not created yet, while submission may still be running; it is FAILED ("half-created") once it
cannot be (both messages: :mod:`torchx.schedulers.submission`): ``submitted-at + submit-wait +
submit-margin`` has passed, or rank 0's container started more than ``submit-margin`` ago (its
pod had an IP before that, and the submitter creates the others right after it sees the IP), or
the scheduler stopped its Jobs (cancel, or ``enforce_fail_fast`` once it read FAILED: the
verdict stays when rank 0's pod is gone). An app without these annotations (submitted by an
older version) is read as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Optional

from torchx.schedulers._kubernetes.names import (
    ANNOTATION_ROLE_REPLICAS,
    ANNOTATION_SUBMIT_MARGIN,
    ANNOTATION_SUBMIT_WAIT,
    ANNOTATION_SUBMITTED_AT,
    LABEL_REPLICA_ID,
    LABEL_ROLE_NAME,
)
from torchx.schedulers._kubernetes.plain import ANNOTATION_STOPPED
from torchx.schedulers.submission import HALF_CREATED, IN_PROGRESS, partial_state
from torchx.specs.api import NONE, AppState, ReplicaStatus, Role, RoleStatus

__all__ = [
    "Partial",
    "Submission",
    "add_missing",
    "check",
    "read_submission",
    "submission_annotations",
]


@dataclass(frozen=True)
class Submission:
    """What a plain-mode app's annotations say about its submission.

    Attributes:
        roles: ``(role name, replicas)`` in role order.
        started: when submission started (seconds since the epoch).
        wait: the longest submission waits for rank 0's pod IP, in seconds.
        margin: the longest the rest of submission takes, in seconds.
    """

    roles: tuple[tuple[str, int], ...]
    started: float
    wait: float
    margin: float

    @property
    def deadline(self) -> float:
        """When, at the latest, every Job exists (seconds since the epoch)."""
        return self.started + self.wait + self.margin


@dataclass(frozen=True)
class Partial:
    """An app with fewer Jobs than its submission recorded.

    Attributes:
        missing: ``(role index, role, replica id)`` of each replica without a Job.
        failed: submission cannot still be running (the app is half-created for good).
    """

    missing: tuple[tuple[int, str, int], ...]
    failed: bool

    def names(self) -> str:
        """``worker[1], worker[2]``."""
        return ", ".join(f"{role}[{k}]" for _, role, k in self.missing)

    def msg(self) -> str:
        """The app's ``msg``: why it is PENDING or FAILED."""
        if not self.failed:
            return f"{IN_PROGRESS}{self.names()} not created yet"
        verb = "has" if len(self.missing) == 1 else "have"
        return (
            f"{HALF_CREATED}{self.names()} {verb} no Job (its submitter stopped before"
            " creating them); run it again"
        )

    def state(self, existing: AppState) -> AppState:
        """The app's state, given the state its existing replicas make (``app_state``)."""
        return partial_state(self.failed, existing)


def submission_annotations(
    roles: Iterable[tuple[str, int]], started: float, wait: float, margin: float
) -> dict[str, str]:
    """The annotations :func:`read_submission` reads (see the module docstring)."""
    return {
        ANNOTATION_ROLE_REPLICAS: ",".join(f"{role}={n}" for role, n in roles),
        ANNOTATION_SUBMITTED_AT: datetime.fromtimestamp(started, UTC).isoformat(),
        ANNOTATION_SUBMIT_WAIT: f"{wait:g}",
        ANNOTATION_SUBMIT_MARGIN: f"{margin:g}",
    }


def _parse(annotations: dict[str, str]) -> Submission:
    roles = []
    for item in annotations[ANNOTATION_ROLE_REPLICAS].split(","):
        role, _, n = item.rpartition("=")
        roles.append((role, int(n)))
    started = datetime.fromisoformat(annotations[ANNOTATION_SUBMITTED_AT]).timestamp()
    wait = float(annotations[ANNOTATION_SUBMIT_WAIT])
    return Submission(tuple(roles), started, wait, float(annotations[ANNOTATION_SUBMIT_MARGIN]))


def read_submission(jobs: Iterable[Any]) -> Optional[Submission]:
    """The submission recorded on the app's Jobs, or None (an older version's app)."""
    for job in jobs:
        annotations = job.metadata.annotations or {}
        if ANNOTATION_ROLE_REPLICAS in annotations:
            try:
                return _parse(annotations)
            except (KeyError, ValueError):
                return None  # edited by hand: read the app as an older version's
    return None


def _container_started(pod: Optional[Any]) -> Optional[float]:
    """When the pod's first container started (its pod had an IP by then), or None."""
    if pod is None or pod.status is None:
        return None
    starts = []
    for status in pod.status.container_statuses or []:
        for state in (status.state, status.last_state):
            for phase in (state and state.running, state and state.terminated):
                if phase is not None and phase.started_at is not None:
                    starts.append(phase.started_at.timestamp())
    return min(starts) if starts else None


def check(jobs: Sequence[Any], rank0_pod: Optional[Any], now: float) -> Optional[Partial]:
    """Whether the app misses Jobs its submission recorded, and if it is too late for them.

    Args:
        jobs: the app's Jobs.
        rank0_pod: the newest pod of role 0's replica 0, if any (None: not read or none).
        now: the time (seconds since the epoch).

    Returns:
        None for a complete app or an app without the annotations, else the :class:`Partial`.
    """
    sub = read_submission(jobs)
    if sub is None:
        return None
    have = set()
    for job in jobs:
        labels = job.metadata.labels or {}
        have.add((labels.get(LABEL_ROLE_NAME, ""), labels.get(LABEL_REPLICA_ID, "")))
    missing = tuple(
        (i, role, k)
        for i, (role, n) in enumerate(sub.roles)
        for k in range(n)
        if (role, str(k)) not in have
    )
    if not missing:
        return None
    started = _container_started(rank0_pod)
    late = now >= sub.deadline or (started is not None and now >= started + sub.margin)
    # stopped (cancelled, or its peers stopped once it read FAILED): rank 0's pod is gone,
    # and nothing creates the missing Jobs any more
    stopped = any((job.metadata.annotations or {}).get(ANNOTATION_STOPPED) for job in jobs)
    return Partial(missing, late or stopped)


def add_missing(
    statuses: list[RoleStatus], roles: list[Role], partial: Partial, now: float
) -> None:
    """Add the replicas without a Job to ``roles_statuses`` and ``roles`` (in place).

    Each is PENDING while submission may run, else FAILED with the half-created message as its
    structured error. Roles keep their order (role index).
    """
    state = AppState.FAILED if partial.failed else AppState.PENDING
    error = NONE
    if partial.failed:
        error = json.dumps({"message": partial.msg(), "errorCode": -1, "timestamp": int(now)})
    by_name = {s.role: s for s in statuses}
    role_by_name = {r.name: r for r in roles}
    for idx, role, k in partial.missing:
        if role not in by_name:
            by_name[role] = RoleStatus(role, [])
            statuses.insert(min(idx, len(statuses)), by_name[role])
            role_by_name[role] = Role(name=role, image="", num_replicas=0)
            roles.insert(min(idx, len(roles)), role_by_name[role])
        replica = ReplicaStatus(k, state, role, hostname="", structured_error_msg=error)
        by_name[role].replicas.append(replica)
        by_name[role].replicas.sort(key=lambda r: r.id)
        role_by_name[role].num_replicas += 1
