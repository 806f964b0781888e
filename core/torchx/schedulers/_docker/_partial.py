"""A ``local_docker`` app whose submitter stopped before starting all its containers.

``schedule`` creates and starts one container per replica, one after the other. A submitter
killed in between (an Airflow worker ``kill -9``-ed right after launch) leaves an app with
some containers only, or one created and never started: it would read SUBMITTED or RUNNING
for ever, with rank 0 waiting for peers that never come. So every container records at
submission (:func:`submission_labels`) how many replicas each role has, which process
submits it and when submission started. An app with a replica missing or never started is
PENDING while its submitter may still be at work, its ``msg`` starting with
:data:`~torchx.schedulers.submission.IN_PROGRESS`; it is FAILED, ``msg`` starting with
:data:`~torchx.schedulers.submission.HALF_CREATED`, once the submitter is gone (same host,
:func:`torchx.util.host.process_gone`) or, where that cannot be told, once
:data:`SUBMIT_MARGIN` (plus a second per replica) has passed since submission started.
Containers without these labels (an older version) are read as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Optional

from torchx.schedulers._docker._state import ContainerInfo
from torchx.schedulers.submission import HALF_CREATED, IN_PROGRESS, partial_state
from torchx.specs.api import AppState
from torchx.util.host import process_gone

__all__ = [
    "LABEL_ROLE_REPLICAS",
    "LABEL_SUBMITTED_AT",
    "LABEL_SUBMITTER",
    "SUBMIT_MARGIN",
    "Partial",
    "check",
    "submission_labels",
]

LABEL_ROLE_REPLICAS = "torchx.pytorch.org/role-replicas"
LABEL_SUBMITTER = "torchx.pytorch.org/submitter"
LABEL_SUBMITTED_AT = "torchx.pytorch.org/submitted-at"
SUBMIT_MARGIN = 120.0
"""Seconds after which submission is over when its submitter cannot be checked (+1 s a replica)."""


def submission_labels(
    roles: Iterable[tuple[str, int]], submitter: str, now: float
) -> dict[str, str]:
    """The labels :func:`check` reads: ``role=n,...``, the submitter's ident, the start time."""
    return {
        LABEL_ROLE_REPLICAS: ",".join(f"{role}={n}" for role, n in roles),
        LABEL_SUBMITTER: submitter,
        LABEL_SUBMITTED_AT: f"{now:.3f}",
    }


@dataclass(frozen=True)
class Partial:
    """An app with replicas not created or not started.

    Attributes:
        missing: ``role[k]`` of each replica without a container or never started.
        failed: submission cannot still be running (the app is half-created for good).
    """

    missing: tuple[str, ...]
    failed: bool

    def msg(self) -> str:
        """The app's ``msg``: why it is PENDING or FAILED."""
        names = ", ".join(self.missing)
        if not self.failed:
            return f"{IN_PROGRESS}{names} not started yet"
        verb = "was" if len(self.missing) == 1 else "were"
        return (
            f"{HALF_CREATED}{names} {verb} never started (its submitter stopped before"
            " starting them); run it again"
        )

    def state(self, existing: AppState) -> AppState:
        """The app's state, given the state its existing replicas make."""
        return partial_state(self.failed, existing)


def _expected(spec: str) -> list[str]:
    names = []
    for part in spec.split(","):
        role, _, n = part.rpartition("=")
        if role and n.isdigit():
            names += [f"{role}[{k}]" for k in range(int(n))]
    return names


def check(infos: Sequence[ContainerInfo], now: float) -> Optional[Partial]:
    """Returns the app's :class:`Partial`, or None when every replica was started.

    Args:
        infos: the app's containers.
        now: the current time (seconds since the epoch).
    """
    first = next((i for i in infos if i.role_replicas), None)
    if first is None:
        return None
    started = {f"{i.role}[{i.replica_id}]" for i in infos if i.status != "created"}
    missing = tuple(n for n in _expected(first.role_replicas) if n not in started)
    if not missing:
        return None
    gone = process_gone(first.submitter)
    if gone is None:
        gone = now > first.submitted_at + SUBMIT_MARGIN + len(_expected(first.role_replicas))
    return Partial(missing, failed=gone)
