"""``Resource``, ``NULL_RESOURCE`` and ``CapabilityKey`` (re-exported from ``specs.api``)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, get_origin

from torchx.specs._constants import get_type_name

__all__ = ["Resource", "NULL_RESOURCE", "CapabilityKey"]

T = TypeVar("T")

_TAG_IS_FRACTIONAL = "torchx/named_resources.is_fractional"
_TAG_NAME = "torchx/named_resources.name"


@dataclass
class Resource:
    """The resources a single replica of a role needs.

    Args:
        cpu: number of logical cpu cores.
        gpu: number of gpus.
        memMB: MB of RAM.
        capabilities: scheduler-specific capabilities (e.g. instance type).
        devices: named devices to mount, with their counts (e.g. EFA).
        tags: descriptive tags, e.g. the named resource a value came from.
    """

    cpu: int
    gpu: int
    memMB: int
    capabilities: dict[str, Any] = field(default_factory=dict)
    devices: dict[str, int] = field(default_factory=dict)
    tags: dict[str, object] = field(default_factory=dict)

    @staticmethod
    def copy(original: Resource, **capabilities: Any) -> Resource:
        """Copies a resource, merging ``capabilities`` over the original's.

        Args:
            original: the resource to copy (cpu, gpu, memMB, devices, tags are kept).
            capabilities: capabilities to add or replace.

        Returns:
            A new, independent ``Resource``.
        """
        res_capabilities = dict(original.capabilities)
        res_capabilities.update(capabilities)
        return Resource(
            cpu=original.cpu,
            gpu=original.gpu,
            memMB=original.memMB,
            capabilities=res_capabilities,
            devices=dict(original.devices),
            tags=copy.deepcopy(original.tags),
        )

    def is_fractional(self) -> bool:
        """Returns the ``torchx/named_resources.is_fractional`` tag (default False)."""
        return bool(self.tags.get(_TAG_IS_FRACTIONAL, False))

    def get_resource_name(self) -> str | None:
        """Returns the ``torchx/named_resources.name`` tag, or None."""
        name = self.tags.get(_TAG_NAME)
        return None if name is None else str(name)


NULL_RESOURCE: Resource = Resource(cpu=-1, gpu=-1, memMB=-1)
"""Sentinel for "no resource specified" (one shared object)."""


def _matches(value: Any, tp: Any) -> bool:
    runtime_type = get_origin(tp) or tp
    if not isinstance(runtime_type, type):
        return True
    if runtime_type is int and isinstance(value, bool):
        return False
    return isinstance(value, runtime_type)


@dataclass(frozen=True)
class CapabilityKey(Generic[T]):
    """A typed key into ``Resource.capabilities``.

    Args:
        namespace: the key namespace (e.g. a scheduler name).
        name: the key name within the namespace.
        type: the expected type of the value.
    """

    namespace: str
    name: str
    type: type[T]

    @property
    def key(self) -> str:
        """The capability key, ``"{namespace}.{name}"``."""
        return f"{self.namespace}.{self.name}"

    def set(self, resource: Resource, value: T) -> None:
        """Writes ``value`` into ``resource.capabilities[self.key]``.

        Args:
            resource: the resource to modify.
            value: the capability value.
        """
        resource.capabilities[self.key] = value

    def get(self, resource: Resource, default: T | None = None) -> T | None:
        """Reads the capability from ``resource``.

        Args:
            resource: the resource to read.
            default: returned when the capability is not set.

        Returns:
            The value, or ``default``.

        Raises:
            TypeError: if the value is not of ``self.type`` (a bool is not an int).
        """
        if self.key not in resource.capabilities:
            return default
        value = resource.capabilities[self.key]
        if not _matches(value, self.type):
            raise TypeError(
                f"capability `{self.key}` expected `{get_type_name(self.type)}`,"
                f" got `{get_type_name(type(value))}`: {value!r}"
            )
        return value
