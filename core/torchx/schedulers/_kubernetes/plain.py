"""AppDef -> plain Kubernetes objects: one ``batch/v1`` Job per replica plus a headless Service.

Plain mode needs nothing beyond a stock cluster (no Volcano), so it works with cluster
autoscalers and with queueing systems that understand Jobs (Kueue). Shape:

- one Job per replica, named ``{app_id}-{role}-{i}`` (``completions=1``, ``parallelism=1``,
  ``backoffLimit=role.max_retries``), its pod labelled like a Volcano task's pod and carrying
  its rank in the env (``${replica_id}`` and ``TORCHX_RANK0_HOST``). Kubernetes 1.20 drops
  ``completionMode: Indexed`` silently (it is GA only in 1.24), so Indexed Jobs are not used;
- one headless Service named after the app that selects every pod of the app and publishes
  not-ready addresses. Each pod sets ``hostname={role}-{i}`` and ``subdomain={service}``, so
  with cluster DNS every replica is reachable as ``{role}-{i}.{service}.{namespace}.svc``.

``TORCHX_JOB_ID`` (set by the runner to ``kubernetes://{session}/${app_id}``) is completed to the
app's real handle, ``kubernetes://{session}/{namespace}:{name}``, so trackers and outputs keyed
on it match what ``torchx run`` printed (TorchX left the namespace out).

How replicas reach rank 0 (the ``rank0_address`` run option):

- ``dns`` (default, for clusters with DNS): ``TORCHX_RANK0_HOST`` is rank 0's DNS name above;
- ``pod_ip`` (for clusters without DNS, such as the repo's local test cluster): submission creates
  rank 0's Job first, waits for its pod IP, and puts that IP into the other replicas'
  ``TORCHX_RANK0_HOST`` (the dry run shows :data:`RANK0_IP_PLACEHOLDER` there). Every pod also
  gets ``PET_LOCAL_ADDR`` = its own pod IP (unless the role sets it), so ``torchrun`` advertises
  an address its peers can reach rather than its FQDN, which only cluster DNS resolves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from torchx.schedulers._kubernetes._opts import RANK0_ADDRESSES
from torchx.schedulers._kubernetes.models import new
from torchx.schedulers._kubernetes.names import (
    ENV_TORCHX_RANK0_HOST,
    LABEL_ORGANIZATION,
    LABEL_UNIQUE_NAME,
    MAX_NAME_LEN,
    PLACEHOLDER_FIELD_PATH,
)
from torchx.schedulers._kubernetes.render import to_plain
from torchx.schedulers._kubernetes.replicas import Replica, iter_replicas, qualify_job_id
from torchx.schedulers._kubernetes.request import KubernetesJob
from torchx.specs.api import AppDef

__all__ = [
    "ANNOTATION_STOPPED",
    "ENV_PET_LOCAL_ADDR",
    "LABEL_MODE",
    "MODE_LABEL_VALUE",
    "RANK0_IP_PLACEHOLDER",
    "PlainJob",
    "PlainRequest",
    "app_to_plain",
    "fill_rank0_ip",
    "job_name",
    "rank0_dns_name",
    "service_name",
]


ENV_PET_LOCAL_ADDR = "PET_LOCAL_ADDR"
"""torchrun's ``--local-addr`` as an env var; ``pod_ip`` mode sets it to each pod's own IP."""

RANK0_IP_PLACEHOLDER = "<rank0-pod-ip>"
"""``TORCHX_RANK0_HOST`` of non-rank-0 replicas in a ``pod_ip`` dry run (filled at submit)."""

LABEL_MODE = "torchx.pytorch.org/kubernetes-mode"
"""Label on every Job and Service of a plain-mode app (value :data:`MODE_LABEL_VALUE`)."""
MODE_LABEL_VALUE = "plain"

ANNOTATION_STOPPED = "torchx.pytorch.org/stopped"
"""Set on a Job whose pods the scheduler stopped: ``cancelled`` or ``peer-failed``."""

PodFactory = Callable[[Replica], Any]


@dataclass
class PlainRequest:
    """What plain mode submits: the headless Service and one Job per replica (rank 0 first).

    Attributes:
        namespace: where the objects go.
        app_id: the unique app name (the Service's name; the prefix of every Job's name).
        service: the headless ``V1Service``.
        jobs: the ``V1Job`` objects, rank 0 first.
        rank0_address: ``dns`` or ``pod_ip``.
    """

    namespace: str
    app_id: str
    service: Any
    jobs: list[Any] = field(default_factory=list)
    rank0_address: str = "dns"

    def manifests(self) -> list[Any]:
        """The objects as plain data (camelCase keys), Service first."""
        return [to_plain(self.service), *(to_plain(job) for job in self.jobs)]


class PlainJob(KubernetesJob):
    """The plain-mode request; ``resource`` is a :class:`PlainRequest`.

    ``str()`` (what ``--dryrun`` prints) is a YAML stream: the Service, then one Job per
    replica, ready for ``kubectl apply -f -``.
    """

    def manifests(self) -> list[Any]:
        """The Service, then the Jobs, as plain data."""
        request: PlainRequest = self.resource
        return request.manifests()


def service_name(app_id: str) -> str:
    """The headless Service's name: the app id (a DNS-1035 label must start with a letter)."""
    return app_id if app_id[:1].isalpha() else f"t{app_id}"[:MAX_NAME_LEN]


def job_name(app_id: str, task: str) -> str:
    """The Job name of the replica whose task name is ``task``."""
    return f"{app_id}-{task}"


def rank0_dns_name(app_id: str, task0: str, namespace: str) -> str:
    """Rank 0's DNS name through the headless Service (resolved by the cluster's DNS)."""
    return f"{task0}.{service_name(app_id)}.{namespace}.svc"


def _app_labels(app_id: str) -> dict[str, str]:
    return {
        LABEL_UNIQUE_NAME: app_id,
        LABEL_ORGANIZATION: "torchx.pytorch.org",
        LABEL_MODE: MODE_LABEL_VALUE,
    }


def _service(app: AppDef, app_id: str, namespace: str) -> Any:
    ports: dict[int, Any] = {}
    for role in app.roles:
        for port_name, port in role.port_map.items():
            ports.setdefault(port, new("V1ServicePort", name=port_name, port=port))
    spec = new(
        "V1ServiceSpec",
        cluster_ip="None",
        selector={LABEL_UNIQUE_NAME: app_id},
        publish_not_ready_addresses=True,
        ports=list(ports.values()) or None,
    )
    meta = new(
        "V1ObjectMeta", name=service_name(app_id), namespace=namespace, labels=_app_labels(app_id)
    )
    service = new("V1Service", metadata=meta, spec=spec)
    service.api_version, service.kind = "v1", "Service"
    return service


def _job(replica: Replica, pod: Any, app_id: str, namespace: str) -> Any:
    pod.spec.hostname = replica.name
    pod.spec.subdomain = service_name(app_id)
    for container in pod.spec.containers:
        # a failed container without a termination message reports its last log lines
        container.termination_message_policy = "FallbackToLogsOnError"
    labels = {**(pod.metadata.labels or {}), **_app_labels(app_id)}
    pod.metadata.labels = labels
    template = new("V1PodTemplateSpec", metadata=pod.metadata, spec=pod.spec)
    spec = new(
        "V1JobSpec",
        template=template,
        backoff_limit=replica.role.max_retries,
        completions=1,
        parallelism=1,
    )
    name = job_name(app_id, replica.name)
    meta = new("V1ObjectMeta", name=name, namespace=namespace, labels=dict(labels))
    job = new("V1Job", metadata=meta, spec=spec)
    job.api_version, job.kind = "batch/v1", "Job"
    return job


def _check_names(app_id: str, replicas: list[Replica]) -> None:
    longest = max(replicas, key=lambda r: len(r.name))
    name = job_name(app_id, longest.name)
    if len(name) > MAX_NAME_LEN:
        raise ValueError(
            f"Job name '{name}' ({len(name)} chars) exceeds the {MAX_NAME_LEN} character limit"
            " of Kubernetes names; shorten app.name or the role names"
        )


def _rank0_host(app: AppDef, app_id: str, namespace: str, rank0_address: str) -> str:
    if rank0_address not in RANK0_ADDRESSES:
        raise ValueError(
            f"run option `rank0_address` must be one of {', '.join(RANK0_ADDRESSES)},"
            f" got `{rank0_address}`"
        )
    if rank0_address == "pod_ip":
        return RANK0_IP_PLACEHOLDER
    first = next(iter_replicas(app, app_id, ENV_TORCHX_RANK0_HOST))
    return rank0_dns_name(app_id, first.name, namespace)


def _replicas(
    app: AppDef, app_id: str, namespace: str, rank0_host: str, by_ip: bool
) -> Iterator[Replica]:
    for replica in iter_replicas(app, app_id, ENV_TORCHX_RANK0_HOST):
        env = replica.materialized.env
        qualify_job_id(env, app_id, namespace)
        if replica.role_idx or replica.replica_id:
            env[ENV_TORCHX_RANK0_HOST] = rank0_host
        if by_ip:
            # torchrun advertises this address to its peers instead of its FQDN, which only
            # cluster DNS resolves
            env.setdefault(ENV_PET_LOCAL_ADDR, f"{PLACEHOLDER_FIELD_PATH}status.podIP")
        yield replica


def app_to_plain(
    app: AppDef,
    app_id: str,
    namespace: str,
    pod_factory: PodFactory,
    rank0_address: str = "dns",
) -> PlainRequest:
    """Build the plain-mode objects of ``app``.

    Every replica's ``${rank0_env}`` is ``TORCHX_RANK0_HOST``: ``localhost`` in rank 0, the
    rank-0 address (see the module docstring) elsewhere.

    Args:
        app: the application (at least one role).
        app_id: the unique, normalized app name.
        namespace: the namespace of the objects.
        pod_factory: builds each replica's ``V1Pod`` (``role_to_pod``, pod settings, overlay,
            labels) from its materialized role.
        rank0_address: ``dns`` or ``pod_ip``.

    Returns:
        The request.

    Raises:
        ValueError: no roles, an unknown ``rank0_address``, or a Job name over 63 characters.
    """
    if not app.roles:
        raise ValueError(f"app `{app.name}` has no roles; add at least one Role")
    rank0_host = _rank0_host(app, app_id, namespace, rank0_address)
    replicas = list(_replicas(app, app_id, namespace, rank0_host, rank0_address == "pod_ip"))
    _check_names(app_id, replicas)
    jobs = [_job(r, pod_factory(r), app_id, namespace) for r in replicas]
    return PlainRequest(namespace, app_id, _service(app, app_id, namespace), jobs, rank0_address)


def fill_rank0_ip(job: Any, ip: str) -> None:
    """Replace :data:`RANK0_IP_PLACEHOLDER` in a Job's env by rank 0's pod IP (in place)."""
    for container in job.spec.template.spec.containers:
        for var in container.env or []:
            if var.value == RANK0_IP_PLACEHOLDER:
                var.value = ip
