"""The launcher task's own pod: resources, secrets as env, placement and a shared volume.

Resources are sized by ``torchx.schedulers.kubernetes_scheduler.requests_and_limits``, the
function that sizes the kubernetes scheduler's pods (limits = the resource, requests less the
node-reserved share). Secrets go through kfp-kubernetes (``use_secret_as_env``): the compiled
IR names the secret and its keys, never a value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from torchx.schedulers.kubernetes_scheduler import requests_and_limits
from torchx.specs import resource as named_resource
from torchx_kfp._compile.task_settings import check_toleration

if TYPE_CHECKING:
    from torchx.specs.api import Resource

__all__ = ["LauncherPod", "mount_claim"]


@dataclasses.dataclass
class LauncherPod:
    """What a launcher task's pod gets.

    Args:
        requests: Kubernetes requests (``cpu``, ``memory``).
        limits: Kubernetes limits (``cpu``, ``memory``).
        secrets: ``{secret name: {secret key: env var}}``.
        node_selector: node labels.
        tolerations: tolerations (``{key, operator, value, effect, toleration_seconds}``).
        pvc: a claim name (or a pipeline channel) to mount, or "".
        pvc_mount_path: where ``pvc`` is mounted.
    """

    requests: dict[str, str] = dataclasses.field(default_factory=dict)
    limits: dict[str, str] = dataclasses.field(default_factory=dict)
    secrets: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    node_selector: dict[str, str] = dataclasses.field(default_factory=dict)
    tolerations: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    pvc: Any = ""
    pvc_mount_path: str = ""

    @classmethod
    def of(
        cls,
        resource: Optional[Union[str, Resource]] = None,
        secrets: Optional[Mapping[str, Mapping[str, str]]] = None,
        node_selector: Optional[Mapping[str, str]] = None,
        tolerations: Optional[Sequence[Mapping[str, Any]]] = None,
        pvc: Any = "",
        pvc_mount_path: str = "",
    ) -> LauncherPod:
        """Validates and collects the options of ``launcher_from_app``.

        Raises:
            ValueError: an unknown named resource, a resource with GPUs or devices (the
                launcher only submits and follows), a bad toleration or secret mapping.
        """
        pod = cls(
            secrets=_secrets(secrets),
            node_selector={str(k): str(v) for k, v in (node_selector or {}).items()},
            tolerations=[check_toleration(t) for t in tolerations or []],
            pvc=pvc,
            pvc_mount_path=pvc_mount_path,
        )
        if pvc and not pvc_mount_path.startswith("/"):
            raise ValueError(f"pvc_mount_path `{pvc_mount_path}` must be an absolute path")
        if resource is not None:
            pod.requests, pod.limits = _sized(resource)
        return pod

    def secret_env(self) -> list[str]:
        """The env vars the secrets set (the launcher passes them on to the app's roles)."""
        return sorted(var for keys in self.secrets.values() for var in keys.values())

    def apply(self, task: Any) -> None:
        """Applies the settings to the launcher's ``PipelineTask``."""
        from kfp import kubernetes  # lazy: kfp-kubernetes, ~65 ms, only for pod settings

        if "cpu" in self.limits:
            task.set_cpu_limit(self.limits["cpu"])
            task.set_cpu_request(self.requests["cpu"])
        if "memory" in self.limits:
            task.set_memory_limit(self.limits["memory"])
            if self.requests["memory"] != "0M":  # KFP refuses a zero request; k8s: the limit
                task.set_memory_request(self.requests["memory"])
        for name, keys in sorted(self.secrets.items()):
            kubernetes.use_secret_as_env(task, secret_name=name, secret_key_to_env=dict(keys))
        for key, value in sorted(self.node_selector.items()):
            kubernetes.add_node_selector(task, key, value)
        for toleration in self.tolerations:
            kubernetes.add_toleration(task, **toleration)
        if self.pvc:
            mount_claim(task, self.pvc, self.pvc_mount_path)


def mount_claim(task: Any, pvc: Any, mount_path: str) -> None:
    """Mounts claim ``pvc`` (a name or a pipeline channel) at ``mount_path`` in ``task``."""
    from kfp import kubernetes  # lazy: kfp-kubernetes, ~65 ms, only for pod settings

    kubernetes.mount_pvc(task, pvc_name=pvc, mount_path=mount_path)


def _sized(resource: Union[str, Resource]) -> tuple[dict[str, str], dict[str, str]]:

    res = named_resource(h=resource) if isinstance(resource, str) else resource
    if res.gpu > 0 or res.devices:
        raise ValueError(
            f"launcher_resource {resource!r} has GPUs or devices; the launcher only submits and"
            " follows the app: give it CPU and memory (e.g. 'cpu.small'), the app its resource"
        )
    return requests_and_limits(res)


def _secrets(secrets: Optional[Mapping[str, Mapping[str, str]]]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for name, keys in (secrets or {}).items():
        if not isinstance(keys, Mapping) or not keys:
            raise ValueError(
                f"secrets[{name!r}] must map secret keys to env vars, e.g."
                f" {{{name!r}: {{'token': 'MLFLOW_TRACKING_TOKEN'}}}}"
            )
        out[str(name)] = {str(k): str(v) for k, v in keys.items()}
    return out
