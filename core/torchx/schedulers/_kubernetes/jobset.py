"""AppDef -> one ``jobset.x-k8s.io/v1alpha2`` JobSet (``-cfg mode=jobset``).

Shape:

- the JobSet is named after the app; one replicated Job per role (``replicas: 1``), named
  ``normalize_str(role.name)``, an Indexed Job with ``completions = parallelism =
  role.num_replicas``; the replica id is the pod's completion index: ``${replica_id}`` becomes
  ``$(TORCHX_REPLICA_ID)``, an env var read from the pod's
  ``batch.kubernetes.io/job-completion-index`` annotation, which Kubernetes expands in the
  command, args and later env values;
- the JobSet controller makes a headless Service named after the JobSet (its ``subdomain``) and
  gives each pod the hostname ``{jobset}-{rjob}-{job index}-{pod index}``, so rank 0 is
  ``{jobset}-{role0}-0-0.{jobset}`` for every replica (``TORCHX_RANK0_HOST``, ``${rank0_env}``);
- retries: ``RetryPolicy.APPLICATION`` restarts the whole JobSet (``failurePolicy.maxRestarts``
  = the largest ``max_retries``, each child Job ``backoffLimit: 0``); ``RetryPolicy.REPLICA``
  retries a failed pod inside its Job (``backoffLimit`` = ``max_retries`` x replicas with
  ``backoffLimitPerIndex`` = ``max_retries``) and never restarts the JobSet. Either way the
  Jobs' ``podFailurePolicy`` ignores pods that failed because of a disruption (preemption,
  eviction, node drain: the ``DisruptionTarget`` condition), so those retry without counting;
- with ``queue`` the JobSet is created suspended with Kueue's labels (``_kubernetes.kueue``).

The JobSet is a plain dict (no model class exists for a CRD); its Jobs' pod templates are the
``V1Pod`` objects of the scheduler's pod factory, as in volcano mode.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from torchx.schedulers._kubernetes.kueue import kueue_labels
from torchx.schedulers._kubernetes.models import new
from torchx.schedulers._kubernetes.names import (
    ENV_TORCHX_RANK0_HOST,
    LABEL_ORGANIZATION,
    LABEL_REPLICA_ID,
    LABEL_UNIQUE_NAME,
    MAX_NAME_LEN,
    PLACEHOLDER_FIELD_PATH,
)
from torchx.schedulers._kubernetes.replicas import Replica, iter_replicas, qualify_job_id
from torchx.schedulers._kubernetes.settings import Settings
from torchx.schedulers._kubernetes.volcano import check_role_names
from torchx.schedulers.labels import app_labels
from torchx.specs.api import AppDef, RetryPolicy, Role
from torchx.util.strings import normalize_str

__all__ = [
    "ANNOTATION_STARTUP_TIMEOUT",
    "ENV_REPLICA_ID",
    "JOBSET_GROUP",
    "JOBSET_PLURAL",
    "JOBSET_VERSION",
    "LABEL_MODE",
    "MODE_LABEL_VALUE",
    "app_to_jobset",
    "disruption_policy",
    "rank0_host",
]

JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_VERSION = "v1alpha2"
JOBSET_PLURAL = "jobsets"
LABEL_MODE = "torchx.pytorch.org/kubernetes-mode"
MODE_LABEL_VALUE = "jobset"
ENV_REPLICA_ID = "TORCHX_REPLICA_ID"
"""The pod's replica id (its completion index), first in every container's env."""
ANNOTATION_STARTUP_TIMEOUT = "torchx.pytorch.org/startup-timeout"
"""Seconds (the ``startup_timeout`` run option) on the JobSet or the plain Jobs."""
_INDEX_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"

PodFactory = Callable[[Replica], Any]


def rank0_host(jobset: str, role0: str) -> str:
    """Rank 0's hostname through the JobSet's headless Service (resolved by cluster DNS)."""
    return f"{jobset}-{normalize_str(role0)}-0-0.{jobset}"


def disruption_policy() -> Any:
    """The Jobs' ``V1PodFailurePolicy``: a disrupted pod is retried without counting."""
    condition = new("V1PodFailurePolicyOnPodConditionsPattern", type="DisruptionTarget")
    rule = new("V1PodFailurePolicyRule", action="Ignore", on_pod_conditions=[condition])
    return new("V1PodFailurePolicy", rules=[rule])


def _indexed(role: Role) -> Role:
    """``role`` as one template: ``${replica_id}`` -> ``$(TORCHX_REPLICA_ID)``, one replica."""

    def sub(value: str) -> str:
        return value.replace("${replica_id}", f"$({ENV_REPLICA_ID})")

    return dataclasses.replace(
        role,
        num_replicas=1,
        args=[sub(a) if isinstance(a, str) else a for a in role.args],
        env={k: sub(v) for k, v in role.env.items()},
    )


def _job_template(replica: Replica, pod: Any, app_id: str, settings: Settings) -> dict[str, Any]:
    role = replica.role
    labels = dict(pod.metadata.labels or {})
    labels.pop(LABEL_REPLICA_ID, None)  # one template for every replica of the role
    labels.update({LABEL_MODE: MODE_LABEL_VALUE})
    pod.metadata.labels = labels
    for container in pod.spec.containers:
        container.termination_message_policy = "FallbackToLogsOnError"
    replica_policy = role.retry_policy == RetryPolicy.REPLICA and role.max_retries > 0
    spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": role.num_replicas,
        "parallelism": role.num_replicas,
        "backoffLimit": role.max_retries * role.num_replicas if replica_policy else 0,
        "podFailurePolicy": disruption_policy(),
        "template": {"metadata": pod.metadata, "spec": pod.spec},
    }
    if replica_policy:
        spec["backoffLimitPerIndex"] = role.max_retries
        del spec["backoffLimit"]
    return {"name": replica.name, "replicas": 1, "template": {"metadata": {}, "spec": spec}}


def _check_names(app_id: str, app: AppDef) -> None:
    if not app_id[:1].isalpha():
        raise ValueError(
            f"JobSet name `{app_id}` must start with a letter (it names a Service);"
            f" start the app name `{app.name}` with a letter"
        )
    for role in app.roles:
        host = f"{app_id}-{normalize_str(role.name)}-0-{max(0, role.num_replicas - 1)}"
        if len(host) > MAX_NAME_LEN:
            raise ValueError(
                f"pod hostname '{host}' ({len(host)} chars) exceeds the {MAX_NAME_LEN} character"
                " limit of Kubernetes names; shorten app.name or the role names"
            )


def _retry_policy(app: AppDef) -> dict[str, Any]:
    app_level = [r.max_retries for r in app.roles if r.retry_policy != RetryPolicy.REPLICA]
    for role in app.roles:
        if role.retry_policy == RetryPolicy.ROLE:
            raise ValueError(
                f"role `{role.name}`: retry_policy ROLE is not supported in jobset mode;"
                " use APPLICATION (restart the JobSet) or REPLICA (retry the pod)"
            )
    return {"maxRestarts": max(app_level, default=0)}


def app_to_jobset(
    app: AppDef, app_id: str, settings: Settings, pod_factory: PodFactory
) -> dict[str, Any]:
    """Build the JobSet of ``app`` (see the module docstring).

    Args:
        app: the application (at least one role).
        app_id: the JobSet name (unique, normalized).
        settings: namespace, Kueue queue and priority, startup timeout.
        pod_factory: builds each role's pod template (``role_to_pod``, pod settings, overlay,
            labels) from its materialized role.

    Returns:
        The JobSet dict; pod templates are ``V1Pod`` parts.

    Raises:
        ValueError: no roles, clashing role names, ``RetryPolicy.ROLE``, or a name too long.
    """
    if not app.roles:
        raise ValueError(f"app `{app.name}` has no roles; add at least one Role")
    check_role_names(app)
    _check_names(app_id, app)
    failure_policy = _retry_policy(app)
    namespace = settings.namespace or "default"
    host = rank0_host(app_id, app.roles[0].name)
    one = AppDef(name=app.name, roles=[_indexed(r) for r in app.roles], metadata=app.metadata)
    jobs = []
    for replica in iter_replicas(one, app_id, ENV_TORCHX_RANK0_HOST, host):
        env = replica.materialized.env
        qualify_job_id(env, app_id, namespace)
        env[ENV_TORCHX_RANK0_HOST] = host
        replica.materialized.env = {ENV_REPLICA_ID: f"{PLACEHOLDER_FIELD_PATH}{_INDEX_FIELD}"}
        replica.materialized.env.update(env)
        named = dataclasses.replace(
            replica, role=app.roles[replica.role_idx], name=normalize_str(replica.role.name)
        )
        jobs.append(_job_template(named, pod_factory(named), app_id, settings))
    labels = {
        LABEL_UNIQUE_NAME: app_id,
        LABEL_ORGANIZATION: "torchx.pytorch.org",
        LABEL_MODE: MODE_LABEL_VALUE,
        **app_labels(app.metadata),
        **kueue_labels(settings.queue, settings.priority_class),
    }
    metadata: dict[str, Any] = {"name": app_id, "namespace": namespace, "labels": labels}
    if settings.startup_timeout:
        metadata["annotations"] = {ANNOTATION_STARTUP_TIMEOUT: f"{settings.startup_timeout:g}"}
    spec: dict[str, Any] = {
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
        "failurePolicy": failure_policy,
        "replicatedJobs": jobs,
    }
    if settings.queue:
        spec["suspend"] = True
    return {
        "apiVersion": f"{JOBSET_GROUP}/{JOBSET_VERSION}",
        "kind": "JobSet",
        "metadata": metadata,
        "spec": spec,
    }
