"""``RetryPolicy``, ``Role``, ``AppDef``, ``AppDryRunInfo`` (re-exported by ``torchx.specs.api``).

``AppDryRunInfo`` (the scheduler request built from an AppDef) lives here because both refer
to each other: ``Role.pre_proc`` takes one, ``AppDryRunInfo.app`` is the AppDef.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from torchx.specs._constants import MISSING
from torchx.specs._mounts import BindMount, DeviceMount, VolumeMount
from torchx.specs._overrides import has_overrides, resolve_override
from torchx.specs._resource import NULL_RESOURCE, Resource
from torchx.specs._workspace import Workspace

__all__ = ["AppDef", "AppDryRunInfo", "RetryPolicy", "Role"]

T = TypeVar("T")


class RetryPolicy(str, Enum):  # noqa: UP042 (TorchX API: str() shows the member)
    """How a role's replicas are restarted when one fails.

    ``REPLICA`` restarts only the failed replica, ``ROLE`` restarts every replica
    of the role, ``APPLICATION`` restarts the whole app.
    """

    REPLICA = "REPLICA"
    APPLICATION = "APPLICATION"
    ROLE = "ROLE"


def _null_resource() -> Resource:
    return Resource.copy(NULL_RESOURCE)


@dataclass
class Role:
    """A set of identical replicas (same image, entrypoint, args and resources).

    Args:
        name: the role name.
        image: the image (container image, directory, ...) the role runs in.
        min_replicas: minimum replicas for elastic jobs (None: ``num_replicas``).
        entrypoint: the command to run inside the image.
        args: the command's arguments (macros are substituted).
        env: environment variables (macros are substituted in the values).
        num_replicas: number of replicas.
        max_retries: number of retries allowed.
        retry_policy: how replicas are restarted.
        resource: the resources of one replica (a fresh copy of ``NULL_RESOURCE``
            by default, so mutating it never changes the global).
        port_map: named ports to expose.
        metadata: free-form, scheduler-specific metadata.
        mounts: bind, volume and device mounts.
        workspace: a local workspace to build into the role's image.
        overrides: deprecated; values that replace attributes on read.
    """

    name: str
    image: str
    min_replicas: int | None = None
    entrypoint: str = MISSING
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    num_replicas: int = 1
    max_retries: int = 0
    retry_policy: RetryPolicy = RetryPolicy.APPLICATION
    resource: Resource = field(default_factory=_null_resource)
    port_map: dict[str, int] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    mounts: list[BindMount | VolumeMount | DeviceMount] = field(default_factory=list)
    workspace: Workspace | None = None
    overrides: dict[str, Any] = field(default_factory=dict)

    def __getattribute__(self, attrname: str) -> Any:
        if attrname == "overrides" or attrname.startswith("_"):
            return object.__getattribute__(self, attrname)
        overrides = object.__getattribute__(self, "__dict__").get("overrides")
        if overrides and attrname in overrides:
            return resolve_override(overrides, attrname)
        return object.__getattribute__(self, attrname)

    def __deepcopy__(self, memo: dict[int, Any]) -> Role:
        state = object.__getattribute__(self, "__dict__")
        cls = type(self)
        new = cls.__new__(cls)
        memo[id(self)] = new
        for key, value in state.items():
            if key == "overrides" and has_overrides(value):
                new.__dict__[key] = value
            else:
                new.__dict__[key] = copy.deepcopy(value, memo)
        return new

    def pre_proc(self, scheduler: str, dryrun_info: AppDryRunInfo[Any]) -> AppDryRunInfo[Any]:
        """Hook to modify the scheduler request for this role before submission.

        ``Scheduler.submit_dryrun`` calls it for each role, in order.

        Args:
            scheduler: the scheduler backend name.
            dryrun_info: the dry-run info holding the raw request.

        Returns:
            The (possibly modified) dry-run info; the input by default.
        """
        return dryrun_info


@dataclass
class AppDef:
    """An application: a name, its roles and metadata.

    Args:
        name: the application name.
        roles: the roles of the application.
        metadata: app-level metadata (values may be nested dicts, e.g. overlays).
    """

    name: str
    roles: list[Role] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)


class AppDryRunInfo(Generic[T]):
    """The raw scheduler request for an app, as built by ``submit_dryrun``.

    Args:
        request: the scheduler-specific request object.
        fmt: formats the request for ``repr()``.
    """

    def __init__(self, request: T, fmt: Callable[[T], str]) -> None:
        self.request = request
        self._fmt = fmt
        # back-references set by the runner and the scheduler
        self._app: AppDef | None = None
        self._cfg: Mapping[str, Any] | None = None
        self._scheduler: str | None = None

    @property
    def app(self) -> AppDef | None:
        """The AppDef this request was built from, or None."""
        return self._app

    @property
    def cfg(self) -> Mapping[str, Any]:
        """A read-only view of the resolved run config."""
        return MappingProxyType(dict(self._cfg or {}))

    def __repr__(self) -> str:
        return self._fmt(self.request)
