"""AppDef -> Volcano ``batch.volcano.sh/v1alpha1`` Job (TorchX's layout, §11.3)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from torchx.schedulers._kubernetes.names import rank0_env_name
from torchx.schedulers._kubernetes.replicas import Replica, iter_replicas, qualify_job_id
from torchx.schedulers._kubernetes.settings import Settings
from torchx.specs.api import AppDef, RetryPolicy, Role
from torchx.util.strings import normalize_str

__all__ = [
    "PodFactory",
    "RETRY_POLICIES",
    "VOLCANO_GROUP",
    "VOLCANO_PLURAL",
    "VOLCANO_VERSION",
    "app_to_volcano_job",
    "check_role_names",
    "retry_policies",
]

VOLCANO_GROUP = "batch.volcano.sh"
VOLCANO_VERSION = "v1alpha1"
VOLCANO_PLURAL = "jobs"

RETRY_POLICIES: Mapping[str, Sequence[Mapping[str, str]]] = MappingProxyType(
    {
        RetryPolicy.REPLICA: (),
        RetryPolicy.APPLICATION: (
            MappingProxyType({"event": "PodEvicted", "action": "RestartJob"}),
            MappingProxyType({"event": "PodFailed", "action": "RestartJob"}),
        ),
    }
)
"""Volcano task ``policies`` per retry policy. ``ROLE`` has no Volcano equivalent here: each
replica is its own task, and Volcano restarts a task or the job, never a group of tasks."""

PodFactory = Callable[[Replica], Any]
"""Builds the ``V1Pod`` (labels included) of one replica."""


def retry_policies(role: Role) -> list[dict[str, str]]:
    """The Volcano ``policies`` of a role's tasks.

    Raises:
        ValueError: for ``RetryPolicy.ROLE`` (TorchX raised a bare ``KeyError``), naming the
            supported policies.
    """
    try:
        return [dict(p) for p in RETRY_POLICIES[role.retry_policy]]
    except KeyError:
        supported = ", ".join(RetryPolicy(p).value for p in RETRY_POLICIES)
        raise ValueError(
            f"role `{role.name}`: retry_policy {role.retry_policy.value} is not supported by the"
            f" kubernetes scheduler in volcano mode; use one of: {supported}"
        ) from None


def check_role_names(app: AppDef) -> None:
    """Every role must give distinct, non-empty task names (``normalize_str`` of the name).

    Raises:
        ValueError: a role name normalizes to nothing, or two roles normalize alike (TorchX
            submitted such Jobs, which Volcano rejects for duplicate task names).
    """
    seen: dict[str, str] = {}
    for role in app.roles:
        key = normalize_str(role.name)
        if not key:
            raise ValueError(
                f"role name `{role.name}` has no letters or digits; Kubernetes names need some"
            )
        if key in seen:
            raise ValueError(
                f"roles `{seen[key]}` and `{role.name}` both become task names `{key}-N`"
                " on Kubernetes (lower-case letters, digits and `-` only); rename one"
            )
        seen[key] = role.name


def _warn_retries(role: Role) -> None:
    warnings.warn(
        f"Role {role.name} configured with restarts: {role.max_retries}. As of 1.4.0 Volcano"
        " does NOT support retries correctly."
        " More info: https://github.com/volcano-sh/volcano/issues/1651",
        stacklevel=4,
    )


def _task(replica: Replica, pod: Any) -> dict[str, Any]:
    role = replica.role
    task: dict[str, Any] = {"replicas": 1, "name": replica.name, "template": pod}
    if role.max_retries > 0:
        task["maxRetry"] = role.max_retries
        task["policies"] = retry_policies(role)
    if role.min_replicas is not None:
        # the first min_replicas tasks are required, later ones optional (elastic)
        task["minAvailable"] = 1 if replica.replica_id < role.min_replicas else 0
    return task


def app_to_volcano_job(
    app: AppDef, app_id: str, settings: Settings, pod_factory: PodFactory
) -> dict[str, Any]:
    """Build the Volcano Job: one task per replica, so macros can differ per replica.

    Args:
        app: the application (at least one role).
        app_id: the job name (already unique and normalized).
        settings: queue, priority class and pod settings.
        pod_factory: builds each replica's pod (``role_to_pod``, pod settings, overlay,
            labels).

    Returns:
        ``{apiVersion, kind, metadata: {name}, spec}`` with ``V1Pod`` task templates.

    Raises:
        ValueError: the app has no role, role names clash once normalized, or a role uses an
            unsupported retry policy.
    """
    if not app.roles:
        raise ValueError(f"app `{app.name}` has no roles; add at least one Role")
    if not app_id[:1].isalpha():
        # Volcano's svc plugin names a Service after the Job: a DNS-1035 label
        raise ValueError(
            f"Job name `{app_id}` must start with a letter (Volcano names a Service after it);"
            f" start the app name `{app.name}` with a letter"
        )
    check_role_names(app)
    for role in app.roles:
        if role.max_retries > 0:
            retry_policies(role)  # fail before building anything
            _warn_retries(role)
    tasks = []
    for replica in iter_replicas(app, app_id, rank0_env_name(app.roles[0].name)):
        if settings.namespace:
            qualify_job_id(replica.materialized.env, app_id, settings.namespace)
        tasks.append(_task(replica, pod_factory(replica)))
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "queue": settings.queue,
        "tasks": tasks,
        "maxRetry": min(role.max_retries for role in app.roles),
        # publish not-ready addresses: rank 0 must resolve before every pod is Ready
        "plugins": {"svc": ["--publish-not-ready-addresses"], "env": []},
    }
    if settings.priority_class is not None:
        spec["priorityClassName"] = settings.priority_class
    return {
        "apiVersion": f"{VOLCANO_GROUP}/{VOLCANO_VERSION}",
        "kind": "Job",
        "metadata": {"name": app_id},
        "spec": spec,
    }
