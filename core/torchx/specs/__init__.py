"""TorchX-compatible spec types: ``from torchx.specs import AppDef, Role, Resource, ...``.

Importing this package is cheap: named resources load on first lookup, and
``materialize_appdef`` (which needs ``docstring_parser``) is imported on first
access from :mod:`torchx.specs.builders`.
"""

from __future__ import annotations

from typing import Any

from torchx.specs import named_resources_aws as named_resources_aws
from torchx.specs import named_resources_generic as named_resources_generic
from torchx.specs._named_resources import GiB as GiB
from torchx.specs._named_resources import ResourceFactory as ResourceFactory
from torchx.specs._named_resources import _NamedResourcesLibrary as _NamedResourcesLibrary
from torchx.specs._named_resources import (
    get_named_resources,
    named_resources,
    resource,
)
from torchx.specs.api import (
    ALL,
    MISSING,
    NA,
    NONE,
    NULL_RESOURCE,
    TORCHX_CONTEXT_NAME,
    TORCHX_HOME,
    UNKNOWN,
    AppDef,
    AppDryRunInfo,
    AppHandle,
    AppState,
    AppStatus,
    BindMount,
    CapabilityKey,
    CfgVal,
    DeviceMount,
    InvalidRunConfigException,
    MalformedAppHandleException,
    ParsedAppHandle,
    ReplicaState,
    ReplicaStatus,
    Resource,
    RetryPolicy,
    Role,
    RoleStatus,
    UnknownAppException,
    UnknownSchedulerException,
    VolumeMount,
    Workspace,
    app_metadata,
    cases,
    get_type_name,
    is_terminal,
    macros,
    make_app_handle,
    parse_app_handle,
    parse_mounts,
    runopt,
    runopts,
)

__all__ = [
    "app_metadata",
    "AppDef",
    "AppDryRunInfo",
    "AppHandle",
    "AppState",
    "AppStatus",
    "BindMount",
    "CapabilityKey",
    "CfgVal",
    "DeviceMount",
    "get_type_name",
    "is_terminal",
    "macros",
    "MISSING",
    "NA",
    "NONE",
    "NULL_RESOURCE",
    "parse_app_handle",
    "ParsedAppHandle",
    "ReplicaState",
    "ReplicaStatus",
    "Resource",
    "RetryPolicy",
    "Role",
    "RoleStatus",
    "runopt",
    "runopts",
    "cases",
    "UNKNOWN",
    "UnknownAppException",
    "UnknownSchedulerException",
    "InvalidRunConfigException",
    "MalformedAppHandleException",
    "VolumeMount",
    "resource",
    "get_named_resources",
    "named_resources",
    "make_app_handle",
    "materialize_appdef",
    "parse_mounts",
    "ALL",
    "TORCHX_CONTEXT_NAME",
    "TORCHX_HOME",
    "Workspace",
]

_LAZY = {"materialize_appdef": "torchx.specs.builders", "import_attr": "torchx.util.modules"}


def __getattr__(name: str) -> Any:
    if name == "plugins":  # the module reference TorchX code patches; loaded on first use
        from torchx import plugins

        globals()["plugins"] = plugins
        return plugins
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'torchx.specs' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
