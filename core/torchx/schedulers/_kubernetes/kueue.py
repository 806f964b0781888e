"""Kueue in plain and jobset modes: the queue labels, and why a queued app waits.

With the ``queue`` run option (a Kueue ``LocalQueue`` in the app's namespace) the app's
objects are created suspended (``spec.suspend: true``) with the ``kueue.x-k8s.io/queue-name``
label; ``priority_class`` becomes the ``kueue.x-k8s.io/priority-class`` label (a Kueue
``WorkloadPriorityClass``). Kueue makes one ``Workload`` per Job (plain) or per JobSet (jobset),
admits it when its ClusterQueue has quota by clearing ``suspend``, and evicts it (suspends it
again) when it is preempted. A JobSet is one Workload, so a multi-role app is admitted as one
unit; Kueue has no grouping of several ``batch/v1`` Jobs, so plain mode takes a queue only for
a one-replica app (see :func:`check_plain`).

:func:`workload_note` reads the app's Workloads (found by their owner's uid) and says why the
app waits: ``QuotaReserved`` False with Kueue's message, or the ``Evicted``/``Preempted``
condition of a Workload that is waiting again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Optional

from torchx.specs.api import NONE, AppDef

__all__ = [
    "KUEUE_GROUP",
    "KUEUE_VERSION",
    "LABEL_KUEUE_PRIORITY",
    "LABEL_KUEUE_QUEUE",
    "check_plain",
    "kueue_labels",
    "workload_note",
]

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"
LABEL_KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
"""The LocalQueue a Job or JobSet is submitted to."""
LABEL_KUEUE_PRIORITY = "kueue.x-k8s.io/priority-class"
"""The WorkloadPriorityClass of a Job or JobSet."""


def kueue_labels(queue: str, priority_class: Optional[str]) -> dict[str, str]:
    """The Kueue labels of an app's top objects ({} without a queue)."""
    if not queue:
        return {}
    labels = {LABEL_KUEUE_QUEUE: queue}
    if priority_class:
        labels[LABEL_KUEUE_PRIORITY] = priority_class
    return labels


def check_plain(app: AppDef, queue: str) -> None:
    """Plain mode takes a Kueue queue only for a one-replica app.

    Raises:
        ValueError: more than one replica with a queue (Kueue would admit each Job on its own).
    """
    replicas = sum(role.num_replicas for role in app.roles)
    if queue and replicas > 1:
        raise ValueError(
            f"plain mode with Kueue (-cfg queue={queue}) admits each replica's Job on its own,"
            f" and app `{app.name}` has {replicas} replicas; use -cfg mode=jobset (one Workload"
            " for the whole app) or drop the queue"
        )


def _conditions(workload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = (workload.get("status") or {}).get("conditions") or []
    return {str(c.get("type")): c for c in found}


def _true(cond: Optional[dict[str, Any]]) -> bool:
    return cond is not None and cond.get("status") == "True"


def _line(kind: str, cond: dict[str, Any]) -> str:
    reason, message = cond.get("reason") or "", " ".join(str(cond.get("message") or "").split())
    return f"{kind} ({reason}): {message}" if reason else f"{kind}: {message}"


def workload_state(workload: dict[str, Any]) -> tuple[bool, str]:
    """``(admitted, note)`` of one Workload; the note is "" when there is nothing to say."""
    conds = _conditions(workload)
    admitted = _true(conds.get("Admitted")) or _true(conds.get("QuotaReserved"))
    notes = []
    for kind in ("Preempted", "Evicted"):
        if _true(conds.get(kind)):
            notes.append(_line(f"{kind.lower()} by Kueue", conds[kind]))
    if not admitted:
        queue = (workload.get("spec") or {}).get("queueName") or ""
        waiting = conds.get("QuotaReserved")
        detail = " ".join(str((waiting or {}).get("message") or "").split())
        notes.insert(0, f"waiting for Kueue admission in queue {queue}: {detail or 'queued'}")
    return admitted, "; ".join(notes)


def workload_note(
    list_workloads: Callable[[str], list[dict[str, Any]]],
    namespace: str,
    owners: Iterable[str],
    queue: str = "",
) -> tuple[Optional[bool], str]:
    """Whether the app's Workloads are admitted, and why they wait.

    Args:
        list_workloads: returns the Workload objects of a namespace ([] without Kueue).
        namespace: the app's namespace.
        owners: the uids of the app's Jobs or JobSet.
        queue: the app's queue label (named in the note of an app without a Workload).

    Returns:
        ``(None, note)`` when the app has no Workload (yet: Kueue makes it within a second,
        so a lasting one means Kueue is not running); else ``(all admitted, note)``.
    """
    uids = set(owners)
    mine = [
        w
        for w in list_workloads(namespace)
        if any(ref.get("uid") in uids for ref in w["metadata"].get("ownerReferences") or [])
    ]
    if not mine:
        return None, (
            f"suspended for Kueue queue {queue}: no Kueue Workload yet"
            " (if this lasts, Kueue is not running or does not manage this kind of object)"
        )
    states = [workload_state(w) for w in mine]
    notes = [note for _, note in states if note]
    return all(admitted for admitted, _ in states), "; ".join(notes)


def workload_lister(custom: Any) -> Callable[[str], list[dict[str, Any]]]:
    """``namespace -> Workloads`` through a ``CustomObjectsApi`` ([] when Kueue is absent)."""

    def list_workloads(namespace: str) -> list[dict[str, Any]]:
        from kubernetes.client.rest import (  # lazy: ~300 ms; runopts kubernetes skips it
            ApiException,
        )

        try:
            found = custom.list_namespaced_custom_object(
                KUEUE_GROUP, KUEUE_VERSION, namespace, "workloads"
            )
        except ApiException as e:
            if e.status in (403, 404):  # no Kueue, or not allowed to read Workloads
                return []
            raise
        return list(found.get("items") or [])

    return list_workloads


def queue_note(custom: Any, namespace: str, jobs: list[Any], msg: str) -> str:
    """``msg`` with Kueue's note on plain Jobs that carry a queue label in front.

    Args:
        custom: a ``CustomObjectsApi`` (read only when a Job carries a queue label).
        namespace: the Jobs' namespace.
        jobs: the app's Jobs.
        msg: the app's message so far (NONE: none).
    """
    queued = [j for j in jobs if LABEL_KUEUE_QUEUE in (j.metadata.labels or {})]
    if not queued:
        return msg
    lister = workload_lister(custom)
    queue = str((queued[0].metadata.labels or {}).get(LABEL_KUEUE_QUEUE))
    _, note = workload_note(lister, namespace, [str(j.metadata.uid) for j in queued], queue)
    if not note:
        return msg
    return note if msg == "" or msg == NONE else f"{note}; {msg}"


def deactivate(custom: Any, namespace: str, owners: Iterable[str]) -> None:
    """Set ``spec.active: false`` on the app's Workloads (Kueue evicts and keeps them out)."""
    uids = set(owners)
    for w in workload_lister(custom)(namespace):
        if any(ref.get("uid") in uids for ref in w["metadata"].get("ownerReferences") or []):
            custom.patch_namespaced_custom_object(
                KUEUE_GROUP,
                KUEUE_VERSION,
                namespace,
                "workloads",
                w["metadata"]["name"],
                {"spec": {"active": False}},
            )


def deactivate_queued(custom: Any, namespace: str, jobs: list[Any]) -> None:
    """:func:`deactivate` the Workloads of those plain Jobs that carry a queue label."""
    uids = [str(j.metadata.uid) for j in jobs if LABEL_KUEUE_QUEUE in (j.metadata.labels or {})]
    if uids:
        deactivate(custom, namespace, uids)
