"""A role's resources, retries and Kubernetes needs -> settings applied to each KFP task.

Resources (§3.7 of the design notes) are sized as the kubernetes scheduler sizes a pod
(``torchx.schedulers.kubernetes_scheduler.requests_and_limits``): limits cpu
``int(cpu*1000)m`` and memory ``<memMB>M``, requests less the node-reserved share (100m,
1024M), so a named resource fits its instance type's node; ``gpu`` is an accelerator of the
capability ``ACCELERATOR_TYPE`` (default ``nvidia.com/gpu``). Kubernetes (through
kfp-kubernetes): other capabilities that are Kubernetes label keys
(``node.kubernetes.io/instance-type``) become node selectors; volume mounts become PVC
mounts; ``/dev/shm`` is a memory ``emptyDir`` (like the TorchX kubernetes scheduler);
tolerations, secrets-as-env and annotations come from the caller.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from torchx.schedulers.kubernetes_scheduler import requests_and_limits
from torchx.specs.api import VolumeMount
from torchx_kfp._errors import unsupported

if TYPE_CHECKING:
    from torchx.specs.api import AppDef, Role

__all__ = [
    "ACCELERATOR_TYPE",
    "DEFAULT_ACCELERATOR",
    "TaskSettings",
    "check_toleration",
    "task_settings",
]

ACCELERATOR_TYPE = "torchx.pytorch.org/accelerator-type"
"""Resource capability naming the KFP accelerator type of the role's ``gpu`` count."""
DEFAULT_ACCELERATOR = "nvidia.com/gpu"
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


@dataclasses.dataclass
class TaskSettings:
    """What :class:`~torchx_kfp.TorchXComponent` applies to every task it creates.

    Args:
        cpu: cpu limit (``"2000m"``), or None.
        memory: memory limit (``"4096M"``), or None.
        cpu_request: cpu request (``"1900m"``), or None (the limit).
        memory_request: memory request (``"3072M"``), or None (the limit).
        accelerator_type: the accelerator type, or None.
        accelerator_count: the accelerator count.
        retries: KFP retries (``Role.max_retries``).
        enable_caching: KFP result caching.
        display_name: the task's display name.
        node_selector: node labels the pod must match.
        tolerations: Kubernetes tolerations (``{key, operator, value, effect}`` dicts).
        secrets: ``{secret name: {secret key: env var}}``.
        pvcs: ``(claim name, mount path)`` pairs.
        shm: mount a memory emptyDir at ``/dev/shm``.
        annotations: pod annotations.
    """

    cpu: Optional[str] = None
    memory: Optional[str] = None
    cpu_request: Optional[str] = None
    memory_request: Optional[str] = None
    accelerator_type: Optional[str] = None
    accelerator_count: int = 0
    retries: int = 0
    enable_caching: bool = False
    display_name: str = ""
    node_selector: dict[str, str] = dataclasses.field(default_factory=dict)
    tolerations: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    secrets: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    pvcs: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    shm: bool = True
    annotations: dict[str, str] = dataclasses.field(default_factory=dict)

    def apply(self, task: Any) -> Any:
        """Applies the settings to a ``PipelineTask`` inside a pipeline and returns it.

        Resources are not set here: they are part of the component's container spec.
        """
        if self.retries > 0:
            task.set_retry(num_retries=self.retries)
        task.set_caching_options(self.enable_caching)
        if self.display_name:
            task.set_display_name(self.display_name)
        self._apply_kubernetes(task)
        return task

    def _kubernetes_key(self) -> Optional[str]:
        """A key of the kfp-kubernetes settings when they hold plain text only (no channel)."""
        parts = [
            self.node_selector,
            self.tolerations,
            self.secrets,
            self.pvcs,
            self.shm,
            self.annotations,
        ]
        try:
            text = json.dumps(parts, sort_keys=True)
        except TypeError:  # a pipeline channel (a PVC name from a CreatePVC task, ...)
            return None
        return None if "{{channel:" in text else text

    def _apply_kubernetes(self, task: Any) -> None:
        """Applies the Kubernetes settings with kfp-kubernetes.

        kfp-kubernetes round-trips the task's whole config through protobuf on every call
        (about a tenth of a millisecond each); for a fresh task and plain-text settings the
        calls run once on a stand-in task and later tasks get a copy of the resulting config.
        """
        key = self._kubernetes_key() if "kubernetes" not in task.platform_config else None
        if key is None:
            self._call_kubernetes(task)
            return
        config = _KUBERNETES_CONFIGS.get(key)
        if config is None:
            stand_in = _StandIn()
            self._call_kubernetes(stand_in)
            config = _KUBERNETES_CONFIGS[key] = stand_in.platform_config.get("kubernetes")
        if config is not None:
            task.platform_config["kubernetes"] = copy.deepcopy(config)

    def _call_kubernetes(self, task: Any) -> None:
        from kfp import kubernetes  # lazy: kfp-kubernetes, ~65 ms, only for pod settings

        for key, value in sorted(self.node_selector.items()):
            kubernetes.add_node_selector(task, key, value)
        for toleration in self.tolerations:
            kubernetes.add_toleration(task, **toleration)
        for name, keys in sorted(self.secrets.items()):
            kubernetes.use_secret_as_env(task, secret_name=name, secret_key_to_env=dict(keys))
        for claim, path in self.pvcs:
            kubernetes.mount_pvc(task, pvc_name=claim, mount_path=path)
        if self.shm:
            kubernetes.empty_dir_mount(
                task, volume_name="dshm", mount_path="/dev/shm", medium="Memory"
            )
        for key, value in sorted(self.annotations.items()):
            kubernetes.add_pod_annotation(task, key, value)


class _StandIn:
    """What kfp-kubernetes reads and writes of a task given plain-text values."""

    def __init__(self) -> None:
        self.platform_config: dict[str, Any] = {}


_KUBERNETES_CONFIGS: dict[str, Optional[dict[str, Any]]] = {}
"""``{settings key: the kubernetes platform config kfp-kubernetes made for them}``."""


def _resources(app: AppDef, role: Role, settings: TaskSettings) -> None:

    res = role.resource
    requests, limits = requests_and_limits(res)
    settings.cpu, settings.cpu_request = limits.get("cpu"), requests.get("cpu")
    settings.memory, settings.memory_request = limits.get("memory"), requests.get("memory")
    caps = dict(res.capabilities)
    accel = caps.pop(ACCELERATOR_TYPE, None)
    if res.gpu and res.gpu > 0:
        settings.accelerator_type = str(accel or DEFAULT_ACCELERATOR)
        settings.accelerator_count = int(res.gpu)
    for key, value in caps.items():
        if not isinstance(value, str) or not _LABEL_KEY.match(key):
            raise unsupported(
                app.name,
                "Resource.capabilities",
                f"of role `{role.name}` has `{key}`={value!r}, which is not a Kubernetes"
                " node label (only label capabilities map to a node selector)",
            )
        settings.node_selector[key] = value


def _mounts(app: AppDef, role: Role, settings: TaskSettings) -> None:

    for mount in role.mounts:
        if not isinstance(mount, VolumeMount):
            continue  # bind and device mounts are rejected by _checks
        if mount.read_only:
            raise unsupported(
                app.name,
                "Role.mounts",
                f"of role `{role.name}` has a read-only VolumeMount ({mount.src}); kfp-kubernetes"
                " mounts PVCs read-write (drop read_only to mount it so)",
            )
        settings.pvcs.append((mount.src, mount.dst_path))


_TOLERATION_KEYS = ("key", "operator", "value", "effect", "toleration_seconds")


def check_toleration(toleration: Mapping[str, Any]) -> dict[str, Any]:
    """Returns ``toleration`` as a dict, or raises naming an unknown key (and a close match)."""
    unknown = sorted(set(toleration) - set(_TOLERATION_KEYS))
    if unknown:
        close = difflib.get_close_matches(unknown[0], _TOLERATION_KEYS, n=1)
        hint = f" (did you mean `{close[0]}`?)" if close else ""
        raise ValueError(
            f"toleration {dict(toleration)} has unknown key `{unknown[0]}`{hint};"
            f" valid keys: {', '.join(_TOLERATION_KEYS)}"
        )
    return dict(toleration)


def _annotations(app: AppDef, role: Role) -> dict[str, str]:

    found: dict[str, str] = {}
    for key, value in {**app.metadata, **role.metadata}.items():
        if not isinstance(value, str):
            raise unsupported(
                app.name,
                "metadata",
                f"`{key}` of role `{role.name}` is {type(value).__name__}, not a string"
                " (metadata becomes pod annotations)",
            )
        found[f"torchx.pytorch.org/{key}"] = value
    if role.port_map:
        found["torchx.pytorch.org/port-map"] = json.dumps(role.port_map, sort_keys=True)
    return found


def task_settings(
    app: AppDef,
    role: Role,
    *,
    enable_caching: bool = False,
    display_name: str = "",
    node_selector: Optional[Mapping[str, str]] = None,
    tolerations: Optional[Sequence[Mapping[str, Any]]] = None,
    secrets: Optional[Mapping[str, Mapping[str, str]]] = None,
    shm: bool = True,
) -> TaskSettings:
    """Returns the task settings of a single-role app (see the module docstring).

    Raises:
        ValueError: a capability or mount that one KFP task cannot express.
    """
    settings = TaskSettings(
        retries=max(role.max_retries, 0),
        enable_caching=enable_caching,
        display_name=display_name or app.name,
        node_selector=dict(node_selector or {}),
        tolerations=[check_toleration(t) for t in tolerations or []],
        secrets={k: dict(v) for k, v in (secrets or {}).items()},
        shm=shm,
        annotations=_annotations(app, role),
    )
    _resources(app, role, settings)
    _mounts(app, role, settings)
    return settings
