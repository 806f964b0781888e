"""The torchx spec types: AppDef, Role, Resource, macros, states, handles, runopts, ...

This is the TorchX-compatible public path; the definitions live in private
``torchx.specs._*`` modules and are re-exported here.
"""

from __future__ import annotations

from torchx.specs._constants import (
    ALL,
    MISSING,
    NA,
    NONE,
    TORCHX_CONTEXT_NAME,
    TORCHX_HOME,
    UNKNOWN,
    app_metadata,
    cases,
    get_type_name,
)
from torchx.specs._errors import (
    InvalidRunConfigException,
    MalformedAppHandleException,
    TorchXError,
    UnknownAppException,
    UnknownSchedulerException,
)
from torchx.specs._handles import (
    AppHandle,
    ParsedAppHandle,
    make_app_handle,
    parse_app_handle,
)
from torchx.specs._macros import macros
from torchx.specs._mounts import BindMount, DeviceMount, MountType, VolumeMount, parse_mounts
from torchx.specs._overrides import _OVERRIDES_LOCK_KEY as _OVERRIDES_LOCK_KEY
from torchx.specs._overrides import _OverridesLock as _OverridesLock
from torchx.specs._resource import NULL_RESOURCE, CapabilityKey, Resource
from torchx.specs._role import AppDef, AppDryRunInfo, RetryPolicy, Role
from torchx.specs._runopts import CfgVal, runopt, runopts
from torchx.specs._state import (
    _TERMINAL_STATES,
    AppState,
    AppStatus,
    AppStatusError,
    ReplicaState,
    ReplicaStatus,
    RoleStatus,
    is_started,
    is_terminal,
)
from torchx.specs._workspace import Workspace

YELLOW_BOLD = "\033[1;33m"
"""ANSI code for bold yellow (warnings about specs)."""

RESET = "\033[0m"
"""ANSI code that resets the colour."""

__all__ = [
    "ALL",
    "MISSING",
    "NA",
    "NONE",
    "NULL_RESOURCE",
    "RESET",
    "TORCHX_CONTEXT_NAME",
    "TORCHX_HOME",
    "UNKNOWN",
    "YELLOW_BOLD",
    "_TERMINAL_STATES",
    "AppDef",
    "AppDryRunInfo",
    "AppHandle",
    "AppState",
    "AppStatus",
    "AppStatusError",
    "BindMount",
    "CapabilityKey",
    "CfgVal",
    "DeviceMount",
    "InvalidRunConfigException",
    "MalformedAppHandleException",
    "MountType",
    "ParsedAppHandle",
    "ReplicaState",
    "ReplicaStatus",
    "Resource",
    "RetryPolicy",
    "Role",
    "RoleStatus",
    "TorchXError",
    "UnknownAppException",
    "UnknownSchedulerException",
    "VolumeMount",
    "Workspace",
    "app_metadata",
    "cases",
    "get_type_name",
    "is_started",
    "is_terminal",
    "macros",
    "make_app_handle",
    "parse_app_handle",
    "parse_mounts",
    "runopt",
    "runopts",
]
