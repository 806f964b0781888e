"""AppDef -> container requests for ``local_docker``: a pure translation (no ``docker`` import).

Every replica becomes one :class:`DockerContainer` whose ``kwargs`` are the keyword arguments of
the docker SDK's ``containers.run`` (plain dicts and lists, so this module needs no SDK). Mounts
use the Engine API's ``Mount`` shape and GPU requests the SDK's ``DeviceRequest`` keywords.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from torchx.schedulers.devices import get_device_mounts
from torchx.schedulers.labels import app_labels
from torchx.specs.api import AppDef, BindMount, DeviceMount, Role, VolumeMount, macros
from torchx.version import __version__

__all__ = [
    "LABEL_APP_ID",
    "LABEL_APP_NAME",
    "LABEL_MAX_RETRIES",
    "LABEL_REPLICA_ID",
    "LABEL_ROLE_INDEX",
    "LABEL_ROLE_NAME",
    "LABEL_SESSION",
    "LABEL_VERSION",
    "NETWORK",
    "RANK0_ENV",
    "DockerContainer",
    "DockerJob",
    "container_name",
    "copy_env",
    "network_name",
    "to_docker_job",
]

LABEL_VERSION = "torchx.pytorch.org/version"
LABEL_APP_ID = "torchx.pytorch.org/app-id"
LABEL_ROLE_NAME = "torchx.pytorch.org/role-name"
LABEL_REPLICA_ID = "torchx.pytorch.org/replica-id"
LABEL_ROLE_INDEX = "torchx.pytorch.org/role-index"
LABEL_APP_NAME = "torchx.pytorch.org/app-name"
LABEL_SESSION = "torchx.pytorch.org/session"
LABEL_MAX_RETRIES = "torchx.pytorch.org/max-retries"

NETWORK = "torchx"
"""Prefix of the per-app user network ``torchx-{app_id}`` (TorchX shares one ``torchx`` network)."""

RANK0_ENV = "TORCHX_RANK0_HOST"

_LEADING_JUNK = re.compile(r"^[^a-zA-Z0-9]+")
_NAME_JUNK = re.compile(r"[^a-zA-Z0-9_.-]")


@dataclass
class DockerContainer:
    """One replica's container: the image, the command and the ``containers.run`` kwargs."""

    image: str
    command: list[str]
    kwargs: dict[str, Any]


@dataclass
class DockerJob:
    """The ``local_docker`` request: the app id, its network and one container per replica.

    ``secret_env`` names the env vars copied from the launching environment (``copy_env``):
    their values are never shown by ``str()`` (what ``--dryrun`` prints).
    """

    app_id: str
    containers: list[DockerContainer]
    network: str = ""
    secret_env: set[str] = field(default_factory=set)
    images_to_push: dict[str, tuple[str, str]] = field(default_factory=dict)

    def __str__(self) -> str:
        import yaml  # lazy: yaml ~17 ms, only to print a dry run

        shown = []
        for c in self.containers:
            kwargs = dict(c.kwargs)
            env = dict(kwargs.get("environment") or {})
            kwargs["environment"] = {
                k: ("<copied>" if k in self.secret_env else v) for k, v in env.items()
            }
            shown.append({"image": c.image, "command": c.command, "kwargs": kwargs})
        return yaml.safe_dump(
            _plain({"app_id": self.app_id, "network": self.network, "containers": shown}),
            sort_keys=False,
        )


def _plain(value: Any) -> Any:
    """Returns ``value`` with dict subclasses as plain dicts and tuples as lists.

    ``yaml.safe_dump`` then renders a request built with the SDK's ``Mount``/``DeviceRequest``.
    """
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def network_name(app_id: str) -> str:
    """Returns the name of the per-app user network."""
    return f"{NETWORK}-{app_id}"


def container_name(app_id: str, role_name: str, replica_id: int) -> str:
    """Returns a replica's container name (also its hostname on the app's network).

    Args:
        app_id: the app id.
        role_name: the role's name.
        replica_id: the replica's index in its role.
    """
    name = f"{app_id[-30:]}-{_NAME_JUNK.sub('-', role_name[:30])}-{replica_id}"
    return _LEADING_JUNK.sub("", name)


def copy_env(
    patterns: Optional[list[str]],
    environ: Mapping[str, str],
    drop: Optional[list[str]] = None,
) -> dict[str, str]:
    """Returns the variables of ``environ`` matching a glob of ``patterns`` and none of ``drop``."""
    if not patterns:
        return {}

    def matches(name: str, globs: Optional[list[str]]) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in globs or ())

    return {k: v for k, v in environ.items() if matches(k, patterns) and not matches(k, drop)}


def _mount(kind: str, src: str, dst: str, read_only: bool) -> dict[str, Any]:
    return {"Type": kind, "Source": src, "Target": dst, "ReadOnly": read_only}


def _mounts(role: Role) -> tuple[list[dict[str, Any]], list[str]]:
    """Returns the Engine API mounts and ``src:dst:perm`` device strings of a role."""
    mounts: list[dict[str, Any]] = []
    devices: list[str] = []
    for m in [*role.mounts, *get_device_mounts(role.resource.devices)]:
        if isinstance(m, BindMount):
            mounts.append(_mount("bind", m.src_path, m.dst_path, m.read_only))
        elif isinstance(m, VolumeMount):
            mounts.append(_mount("volume", m.src, m.dst_path, m.read_only))
        elif isinstance(m, DeviceMount):
            devices.append(f"{m.src_path}:{m.dst_path}:{m.permissions}")
    return mounts, devices


def _resources(role: Role) -> dict[str, Any]:
    """Returns the resource and restart kwargs of a role's containers."""
    res = role.resource
    kwargs: dict[str, Any] = {}
    if role.max_retries > 0:
        kwargs["restart_policy"] = {"Name": "on-failure", "MaximumRetryCount": role.max_retries}
    if res.memMB >= 0:
        kwargs["mem_limit"] = f"{res.memMB}m"
        kwargs["shm_size"] = f"{res.memMB}m"
    if res.cpu >= 0:
        kwargs["nano_cpus"] = int(res.cpu * 1e9)
    if res.gpu > 0:
        kwargs["device_requests"] = [{"count": res.gpu, "capabilities": [["compute", "utility"]]}]
    return kwargs


@dataclass
class _JobSettings:
    app_id: str
    session: str
    network: str
    env: dict[str, str]
    privileged: bool


def _container(
    app: AppDef, role_idx: int, replica_id: int, rank0: str, s: _JobSettings
) -> DockerContainer:
    role = app.roles[role_idx]
    name = container_name(s.app_id, role.name, replica_id)
    values = macros.Values(
        img_root="", app_id=s.app_id, replica_id=str(replica_id), rank0_env=RANK0_ENV
    )
    replica = values.apply(role)
    env = {**s.env, **replica.env, RANK0_ENV: rank0, "TORCHX_IMAGE": role.image}
    mounts, devices = _mounts(replica)
    labels = {
        LABEL_VERSION: __version__,
        LABEL_APP_ID: s.app_id,
        LABEL_APP_NAME: app.name,
        LABEL_SESSION: s.session,
        LABEL_ROLE_NAME: role.name,
        LABEL_ROLE_INDEX: str(role_idx),
        LABEL_REPLICA_ID: str(replica_id),
    }
    if role.max_retries > 0:
        labels[LABEL_MAX_RETRIES] = str(role.max_retries)
    labels.update(app_labels(app.metadata))  # LaunchRequest(labels=...)
    kwargs: dict[str, Any] = {
        "name": name,
        "hostname": name,
        "environment": env,
        "labels": labels,
        "privileged": s.privileged,
        "network": s.network,
        "mounts": mounts,
        "devices": devices,
        **_resources(replica),
    }
    if replica.port_map:
        # published on the loopback only; replicas reach each other on the app network anyway
        kwargs["ports"] = {f"{p}/tcp": ("127.0.0.1", None) for p in replica.port_map.values()}
    command = [replica.entrypoint, *replica.args]
    return DockerContainer(image=role.image, command=command, kwargs=kwargs)


def to_docker_job(
    app: AppDef,
    app_id: str,
    session: str,
    *,
    env: Optional[Mapping[str, str]] = None,
    copied_env: Optional[Mapping[str, str]] = None,
    privileged: bool = False,
) -> DockerJob:
    """Translates ``app`` into one container request per replica.

    Env precedence (later wins): ``copied_env``, ``env``, the role's env, then
    ``TORCHX_RANK0_HOST`` (rank 0's container name) and ``TORCHX_IMAGE``.

    Args:
        app: the application.
        app_id: its unique id.
        session: the scheduler session (a label, so ``list`` can scope to it).
        env: extra env for every replica (the ``env`` run option).
        copied_env: env copied from the launcher (``copy_env``); hidden by ``str()``.
        privileged: run the containers privileged.

    Returns:
        The request.
    """
    network = network_name(app_id)
    rank0 = container_name(app_id, app.roles[0].name, 0) if app.roles else ""
    base_env = {**(copied_env or {}), **(env or {})}
    settings = _JobSettings(app_id, session, network, base_env, privileged)
    containers = [
        _container(app, role_idx, replica_id, rank0, settings)
        for role_idx, role in enumerate(app.roles)
        for replica_id in range(role.num_replicas)
    ]
    secret = set(copied_env or {})
    return DockerJob(app_id=app_id, containers=containers, network=network, secret_env=secret)
