"""TorchX-compatible spec types: ``from torchx.specs import AppDef, Role, Resource, ...``.

Importing this package is cheap: it imports nothing until a name is looked up (PEP 562), so
``import torchx.specs._runopts`` (the run options of a scheduler) does not import the app
types of :mod:`torchx.specs.api`. The public names come from :mod:`torchx.specs.api`
(loaded together on first access), :mod:`torchx.specs._named_resources` (named resources
load on first lookup) and ``materialize_appdef`` from :mod:`torchx.specs.builders` (which
needs ``docstring_parser``); the submodules ``named_resources_aws`` and
``named_resources_generic`` are attributes too.
"""

from __future__ import annotations

import importlib

# no ``typing`` import at run time: every ``torchx.specs.*`` import pays for this package
TYPE_CHECKING = False
if TYPE_CHECKING:
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
    from torchx.specs.builders import materialize_appdef

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

# where each name lives: torchx.specs.api unless said otherwise below
_LAZY: dict[str, str] = {
    **dict.fromkeys(__all__, "torchx.specs.api"),
    **dict.fromkeys(
        [
            "GiB",
            "ResourceFactory",
            "_NamedResourcesLibrary",
            "get_named_resources",
            "named_resources",
            "resource",
        ],
        "torchx.specs._named_resources",
    ),
    "materialize_appdef": "torchx.specs.builders",
    "import_attr": "torchx.util.modules",
}
_SUBMODULES = frozenset({"named_resources_aws", "named_resources_generic"})


def __getattr__(name: str) -> Any:
    if name == "plugins":  # the module reference TorchX code patches; loaded on first use
        from torchx import plugins  # lazy: package entry point; the registry ~10 ms

        globals()["plugins"] = plugins
        return plugins
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")  # sets the attribute too
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'torchx.specs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_SUBMODULES, "plugins"})
