"""Label, annotation and name constants, the label cleaner and the app id of both modes."""

from __future__ import annotations

import functools
import re

from torchx.schedulers.labels import app_labels
from torchx.specs.api import AppDef, Role
from torchx.util.strings import normalize_str
from torchx.version import __version__

__all__ = [
    "ANNOTATION_ISTIO_SIDECAR",
    "ANNOTATION_ROLE_REPLICAS",
    "ANNOTATION_SUBMITTED_AT",
    "ANNOTATION_SUBMIT_MARGIN",
    "ANNOTATION_SUBMIT_WAIT",
    "ENV_TORCHX_IMAGE",
    "ENV_TORCHX_RANK0_HOST",
    "LABEL_APP_NAME",
    "LABEL_INSTANCE_TYPE",
    "LABEL_KUBE_APP_NAME",
    "LABEL_ORGANIZATION",
    "LABEL_REPLICA_ID",
    "LABEL_ROLE_INDEX",
    "LABEL_ROLE_NAME",
    "LABEL_UNIQUE_NAME",
    "LABEL_VERSION",
    "MAX_NAME_LEN",
    "PLACEHOLDER_FIELD_PATH",
    "RESERVED_MEMMB",
    "RESERVED_MILLICPU",
    "clean_label",
    "pod_labels",
    "prefix_container_name",
    "rank0_env_name",
    "split_app_id",
    "task_name",
    "volcano_pod_name",
]

RESERVED_MILLICPU = 100
"""Millicores subtracted from each pod's CPU request (node-reserved CPU; limits keep the full)."""

RESERVED_MEMMB = 1024
"""Megabytes subtracted from each pod's memory request (node-reserved memory)."""

LABEL_VERSION = "torchx.pytorch.org/version"
LABEL_APP_NAME = "torchx.pytorch.org/app-name"
LABEL_ROLE_INDEX = "torchx.pytorch.org/role-index"
LABEL_ROLE_NAME = "torchx.pytorch.org/role-name"
LABEL_REPLICA_ID = "torchx.pytorch.org/replica-id"
LABEL_KUBE_APP_NAME = "app.kubernetes.io/name"
LABEL_ORGANIZATION = "app.kubernetes.io/managed-by"
LABEL_UNIQUE_NAME = "app.kubernetes.io/instance"
ANNOTATION_ISTIO_SIDECAR = "sidecar.istio.io/inject"
LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"

# plain mode: what submission creates and how long it may take (``_kubernetes.plain_partial``)
ANNOTATION_ROLE_REPLICAS = "torchx.pytorch.org/role-replicas"
"""``{role}={replicas},...`` in role order (role names as in the role-name label): its Jobs."""
ANNOTATION_SUBMITTED_AT = "torchx.pytorch.org/submitted-at"
"""When submission started: ISO 8601 UTC, the submitter's clock."""
ANNOTATION_SUBMIT_WAIT = "torchx.pytorch.org/submit-wait"
"""Seconds submission may wait for rank 0's pod IP (``rank0_address=pod_ip``), else ``0``."""
ANNOTATION_SUBMIT_MARGIN = "torchx.pytorch.org/submit-margin"
"""Seconds submission takes at most besides that wait (creating the Jobs, clock skew)."""

PLACEHOLDER_FIELD_PATH = "[FIELD_PATH]"
"""An env value starting with this prefix becomes ``valueFrom.fieldRef.fieldPath`` (the rest)."""

ENV_TORCHX_RANK0_HOST = "TORCHX_RANK0_HOST"
ENV_TORCHX_IMAGE = "TORCHX_IMAGE"

MAX_NAME_LEN = 63
"""Longest DNS label: pod names, label values and Service names."""

_LABEL_BAD_CHARS = re.compile(r"[^A-Za-z0-9\-_.]")
_LABEL_EDGES = re.compile(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$")


@functools.lru_cache(maxsize=4096)
def clean_label(value: str) -> str:
    """Make ``value`` a valid label value.

    Characters outside ``[A-Za-z0-9-_.]`` become ``.``, the value is cut to 63 characters and
    non-alphanumeric characters at either end are removed. (TorchX replaced the edges with
    ``.``, which the API server rejects: a label value must begin and end alphanumeric.)

    Args:
        value: any string.

    Returns:
        A valid (possibly empty) label value.
    """
    return _LABEL_EDGES.sub("", _LABEL_BAD_CHARS.sub(".", value)[:MAX_NAME_LEN])


def pod_labels(
    app: AppDef, role_idx: int, role: Role, replica_id: int, app_id: str
) -> dict[str, str]:
    """The labels every pod of a replica carries (they key ``describe``, ``list`` and logs).

    Args:
        app: the application.
        role_idx: index of the role in ``app.roles``.
        role: the role.
        replica_id: index of the replica within the role.
        app_id: the unique (normalized) job name.

    Returns:
        The label dict, values cleaned with :func:`clean_label`, plus the app labels of
        ``app.metadata`` (``torchx.schedulers.labels``).
    """
    return {
        LABEL_VERSION: clean_label(__version__),
        LABEL_APP_NAME: clean_label(app.name),
        LABEL_ROLE_INDEX: str(role_idx),
        LABEL_ROLE_NAME: clean_label(role.name),
        LABEL_REPLICA_ID: str(replica_id),
        LABEL_KUBE_APP_NAME: clean_label(app.name),
        LABEL_ORGANIZATION: "torchx.pytorch.org",
        LABEL_UNIQUE_NAME: clean_label(app_id),
        **app_labels(app.metadata),  # LaunchRequest(labels=...), already label-safe
    }


def task_name(role_name: str, replica_id: int) -> str:
    """The Volcano task (and container) name of a replica: ``normalize_str("{role}-{i}")``."""
    return normalize_str(f"{role_name}-{replica_id}")


def volcano_pod_name(job: str, role_name: str, replica_id: int) -> str:
    """The pod Volcano creates for a replica: ``{job}-{task}-0`` (one pod per task).

    Args:
        job: the Volcano Job name.
        role_name: the role, as written or as ``describe`` returns it (normalized).
        replica_id: the replica's index.

    Returns:
        The pod name (what ``log_iter`` reads in volcano mode).
    """
    return f"{job}-{task_name(role_name, replica_id)}-0"


def rank0_env_name(role0_name: str) -> str:
    """The env var Volcano's ``svc`` plugin sets to the host of role 0's first task.

    Volcano upper-cases the task name and turns ``-`` into ``_``; TorchX kept the ``-``
    (``VC_MY-ROLE_0_HOSTS``), a name Volcano never sets and no shell can expand.
    """
    return f"VC_{normalize_str(role0_name)}_0_HOSTS".upper().replace("-", "_")


def prefix_container_name(container_name: str, role_name: str, replica_id: int) -> str:
    """The prefix for log lines of ``container_name`` in a replica's pod.

    Args:
        container_name: the container the line came from.
        role_name: the replica's role.
        replica_id: the replica's index.

    Returns:
        ``""`` for the replica's own container (``{role}-{replica_id}``), else
        ``"{container_name} "`` (sidecars, init containers).
    """
    if container_name == f"{role_name}-{replica_id}":
        return ""
    return f"{container_name} "


def split_app_id(app_id: str) -> tuple[str, str]:
    """``"{namespace}:{name}"`` (the app id of both modes) -> ``(namespace, name)``.

    Raises:
        ValueError: ``app_id`` is not of that form.
    """
    namespace, sep, name = app_id.partition(":")
    if not sep or not namespace or not name or ":" in name:
        raise ValueError(f"kubernetes app id `{app_id}` is not of the form NAMESPACE:NAME")
    return namespace, name
