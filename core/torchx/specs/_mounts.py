"""Mount types and ``parse_mounts`` (re-exported from :mod:`torchx.specs.api`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum

__all__ = ["MountType", "BindMount", "VolumeMount", "DeviceMount", "parse_mounts"]


class MountType(str, Enum):  # noqa: UP042 (TorchX API: str() shows the member)
    """The kinds of mounts a role can request."""

    BIND = "bind"
    VOLUME = "volume"
    DEVICE = "device"


@dataclass
class BindMount:
    """Mounts a host path into the worker environment.

    Args:
        src_path: the path on the host.
        dst_path: the path in the worker environment.
        read_only: mount read-only.
    """

    src_path: str
    dst_path: str
    read_only: bool = False


@dataclass
class VolumeMount:
    """Mounts a persistent volume into the worker environment.

    Args:
        src: the volume name or id.
        dst_path: the path in the worker environment.
        read_only: mount read-only.
    """

    src: str
    dst_path: str
    read_only: bool = False


@dataclass
class DeviceMount:
    """Mounts a host device into the worker environment.

    Args:
        src_path: the device path on the host.
        dst_path: the device path in the worker environment.
        permissions: a combination of ``r``, ``w`` and ``m``.
    """

    src_path: str
    dst_path: str
    permissions: str = "rwm"


_KEY_ALIASES = {
    "type": "type",
    "src": "src",
    "source": "src",
    "dst": "dst",
    "destination": "dst",
    "target": "dst",
    "readonly": "readonly",
    "read_only": "readonly",
    "perm": "perm",
}
_TYPES = [t.value for t in MountType]
_FALSE = {"false", "0", "no", "off"}


def _group_options(opts: list[str]) -> list[dict[str, str]]:
    groups: list[dict[str, str]] = []
    for opt in opts:
        key, sep, value = opt.partition("=")
        key = key.strip()
        if key not in _KEY_ALIASES:
            raise KeyError(f"unknown mount option {key}, must be one of {list(_KEY_ALIASES)}")
        canonical = _KEY_ALIASES[key]
        if canonical == "type":
            groups.append({"type": value})
        elif not groups:
            raise KeyError("type must be specified first")
        elif canonical == "readonly":
            groups[-1]["readonly"] = "false" if sep and value.lower() in _FALSE else "true"
        else:
            groups[-1][canonical] = value
    return groups


def _require(args: dict[str, str], key: str) -> str:
    if key not in args:
        raise KeyError(f"{args['type']} mount is missing `{key}`, e.g. type=bind,src=/a,dst=/b")
    return args[key]


def _make_mount(args: dict[str, str]) -> BindMount | VolumeMount | DeviceMount:
    mount_type = args["type"]
    read_only = args.get("readonly") == "true"
    if mount_type == MountType.BIND:
        src = os.path.expanduser(_require(args, "src"))
        return BindMount(src_path=src, dst_path=_require(args, "dst"), read_only=read_only)
    if mount_type == MountType.VOLUME:
        return VolumeMount(
            src=_require(args, "src"), dst_path=_require(args, "dst"), read_only=read_only
        )
    if mount_type == MountType.DEVICE:
        src = _require(args, "src")
        perm = args.get("perm") or "rwm"
        for c in perm:
            if c not in "rwm":
                raise ValueError(f"{c} is not a valid permission flags must one of r,w,m")
        return DeviceMount(src_path=src, dst_path=args.get("dst") or src, permissions=perm)
    raise ValueError(f"invalid mount type {mount_type!r}, must be one of {_TYPES}")


def parse_mounts(opts: list[str]) -> list[BindMount | VolumeMount | DeviceMount]:
    """Parses Docker-style mount options into mount objects.

    Each ``type=`` token starts a new mount, e.g.
    ``["type=bind", "src=/a", "dst=/b", "readonly"]``. Keys: ``type``,
    ``src``/``source``, ``dst``/``destination``/``target``,
    ``readonly``/``read_only`` (a flag) and ``perm`` (devices).

    Args:
        opts: the ``key=value`` or flag tokens.

    Returns:
        The mounts, in order.

    Raises:
        KeyError: for an option before the first ``type`` or an unknown option.
        ValueError: for an unknown mount type or invalid device permissions.
    """
    return [_make_mount(args) for args in _group_options(opts)]
