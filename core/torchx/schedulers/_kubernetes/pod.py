"""``role_to_pod``: one replica's ``Role`` (macros already applied) -> a ``V1Pod`` (§11.3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from torchx.schedulers._kubernetes.models import new
from torchx.schedulers._kubernetes.names import (
    ANNOTATION_ISTIO_SIDECAR,
    LABEL_INSTANCE_TYPE,
    PLACEHOLDER_FIELD_PATH,
    RESERVED_MEMMB,
    RESERVED_MILLICPU,
)
from torchx.specs.api import BindMount, DeviceMount, Resource, Role, VolumeMount

__all__ = ["EFA_DEVICE", "SHM_VOLUME", "requests_and_limits", "role_to_pod"]

EFA_DEVICE = "vpc.amazonaws.com/efa"
SHM_VOLUME = "dshm"


def requests_and_limits(
    resource: Resource,
    reserved_millicpu: int = RESERVED_MILLICPU,
    reserved_memmb: int = RESERVED_MEMMB,
) -> tuple[dict[str, str], dict[str, str]]:
    """A resource's Kubernetes ``(requests, limits)`` for cpu, memory and ``nvidia.com/gpu``.

    Limits are the resource itself; the CPU and memory requests subtract the node-reserved
    share (never below 0), so a named resource sized like its instance fits that node's
    allocatable capacity. The kubernetes scheduler and the KFP adapter both size containers
    with this function. ``Resource.devices`` are not included.

    Args:
        resource: the role's resource.
        reserved_millicpu: millicores subtracted from the CPU request.
        reserved_memmb: megabytes subtracted from the memory request.

    Example::

        requests_and_limits(Resource(cpu=2, gpu=0, memMB=4096))
        # ({'cpu': '1900m', 'memory': '3072M'}, {'cpu': '2000m', 'memory': '4096M'})
    """
    limits: dict[str, str] = {}
    requests: dict[str, str] = {}
    if resource.cpu > 0:
        mcpu = int(resource.cpu * 1000)
        limits["cpu"] = f"{mcpu}m"
        requests["cpu"] = f"{max(mcpu - reserved_millicpu, 0)}m"
    if resource.memMB > 0:
        limits["memory"] = f"{int(resource.memMB)}M"
        requests["memory"] = f"{max(int(resource.memMB) - reserved_memmb, 0)}M"
    if resource.gpu > 0:
        requests["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = str(resource.gpu)
    return requests, limits


def _resources(
    resource: Resource,
    reserved_millicpu: int,
    reserved_memmb: int,
    efa_device_count: Optional[int],
) -> Any:
    """Limits are the role's resource; requests subtract the node-reserved share (>= 0)."""
    requests, limits = requests_and_limits(resource, reserved_millicpu, reserved_memmb)
    for device, count in resource.devices.items():
        limits[device] = str(count)
    if efa_device_count == 0:
        limits.pop(EFA_DEVICE, None)
    elif efa_device_count is not None:
        limits[EFA_DEVICE] = str(efa_device_count)
    return new("V1ResourceRequirements", limits=limits, requests=requests)


def _mount_volume(name: str, mount: BindMount | VolumeMount | DeviceMount) -> tuple[Any, Any]:
    if isinstance(mount, VolumeMount):
        source = new("V1PersistentVolumeClaimVolumeSource", claim_name=mount.src)
        volume = new("V1Volume", name=name, persistent_volume_claim=source)
        read_only = mount.read_only
    elif isinstance(mount, BindMount | DeviceMount):
        source = new("V1HostPathVolumeSource", path=mount.src_path)
        volume = new("V1Volume", name=name, host_path=source)
        if isinstance(mount, BindMount):
            read_only = mount.read_only
        else:
            read_only = "w" not in mount.permissions and "m" not in mount.permissions
    else:
        raise TypeError(f"unknown mount type {type(mount).__name__}: {mount!r}")
    return volume, new("V1VolumeMount", name=name, mount_path=mount.dst_path, read_only=read_only)


def _volumes(role: Role) -> tuple[list[Any], list[Any], bool]:
    """``(volumes, volume_mounts, privileged)``: ``/dev/shm`` first, then ``mount-{i}``."""
    shm = new("V1EmptyDirVolumeSource", medium="Memory")
    volumes = [new("V1Volume", name=SHM_VOLUME, empty_dir=shm)]
    mounts = [new("V1VolumeMount", name=SHM_VOLUME, mount_path="/dev/shm")]
    privileged = False
    for i, mount in enumerate(role.mounts):
        volume, volume_mount = _mount_volume(f"mount-{i}", mount)
        volumes.append(volume)
        mounts.append(volume_mount)
        privileged = privileged or isinstance(mount, DeviceMount)
    return volumes, mounts, privileged


def env_vars(env: Mapping[str, str]) -> list[Any]:
    """``V1EnvVar`` list; a value starting ``[FIELD_PATH]`` becomes a ``fieldRef``.

    The exact prefix is removed (TorchX used ``str.strip``, which also ate trailing
    characters of the path: ``status.podIP`` became ``status.pod``).
    """
    out = []
    for name, value in env.items():
        if value.startswith(PLACEHOLDER_FIELD_PATH):
            selector = new("V1ObjectFieldSelector", field_path=value[len(PLACEHOLDER_FIELD_PATH) :])
            source = new("V1EnvVarSource", field_ref=selector)
            out.append(new("V1EnvVar", name=name, value_from=source))
        else:
            out.append(new("V1EnvVar", name=name, value=value))
    return out


def role_to_pod(
    name: str,
    role: Role,
    service_account: Optional[str],
    reserved_millicpu: int = RESERVED_MILLICPU,
    reserved_memmb: int = RESERVED_MEMMB,
    efa_device_count: Optional[int] = None,
) -> Any:
    """Build the pod of one replica.

    Args:
        name: the container name (the Volcano task name, ``{role}-{replica}`` normalized).
        role: the replica's role, macros already substituted.
        service_account: the pod's service account, or None.
        reserved_millicpu: subtracted from the CPU request.
        reserved_memmb: subtracted from the memory request.
        efa_device_count: None keeps ``resource.devices``; 0 removes EFA; N sets it to N.

    Returns:
        A ``kubernetes.client.V1Pod`` with empty labels (the caller adds them).
    """
    volumes, volume_mounts, privileged = _volumes(role)
    container = new(
        "V1Container",
        command=[role.entrypoint, *role.args],
        image=role.image,
        name=name,
        env=env_vars(role.env),
        resources=_resources(role.resource, reserved_millicpu, reserved_memmb, efa_device_count),
        ports=[new("V1ContainerPort", name=k, container_port=v) for k, v in role.port_map.items()],
        volume_mounts=volume_mounts,
        security_context=new("V1SecurityContext", privileged=True if privileged else None),
    )
    node_selector: dict[str, str] = {}
    if LABEL_INSTANCE_TYPE in role.resource.capabilities:
        node_selector[LABEL_INSTANCE_TYPE] = str(role.resource.capabilities[LABEL_INSTANCE_TYPE])
    spec = new(
        "V1PodSpec",
        containers=[container],
        restart_policy="Never",
        service_account_name=service_account,
        volumes=volumes,
        node_selector=node_selector,
    )
    # the istio sidecar would keep the pod running after the main container exits
    metadata = new("V1ObjectMeta", annotations={ANNOTATION_ISTIO_SIDECAR: "false"}, labels={})
    return new("V1Pod", spec=spec, metadata=metadata)
