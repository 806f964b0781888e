"""What one KFP task can express: every AppDef field is mapped or rejected, never dropped."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchx.specs.api import BindMount, DeviceMount, RetryPolicy
from torchx_kfp._errors import unsupported

if TYPE_CHECKING:
    from torchx.specs.api import AppDef, Role

__all__ = ["check_single_task"]


def check_single_task(app: AppDef) -> Role:
    """Returns the app's only role, or raises when one KFP task cannot run ``app``.

    Args:
        app: the AppDef (macros not yet substituted).

    Raises:
        ValueError: naming the field (several roles or replicas, ports, devices, bind or
            device mounts, a workspace, scheduler overrides, a retry policy other than
            APPLICATION) and pointing at the launcher. ``Role.port_map`` is allowed: in one
            container every port is reachable on localhost (the task settings record it as a
            pod annotation); only other replicas would need it exposed.
    """
    if len(app.roles) != 1:
        names = ", ".join(r.name for r in app.roles) or "none"
        raise unsupported(app.name, "AppDef.roles", f"has {len(app.roles)} roles ({names})")
    role = app.roles[0]
    _check_role(app.name, role)
    return role


def _check_role(app_name: str, role: Role) -> None:

    where = f"role `{role.name}`"
    if role.num_replicas != 1:
        raise unsupported(app_name, "Role.num_replicas", f"of {where} is {role.num_replicas}")
    if role.min_replicas is not None and role.min_replicas != 1:
        raise unsupported(app_name, "Role.min_replicas", f"of {where} is {role.min_replicas}")
    if role.resource.devices:
        raise unsupported(app_name, "Resource.devices", f"of {where} is {role.resource.devices}")
    for mount in role.mounts:
        if isinstance(mount, BindMount | DeviceMount):
            kind = type(mount).__name__
            raise unsupported(
                app_name, "Role.mounts", f"of {where} has a {kind} ({mount.src_path})"
            )
    if role.max_retries > 0 and role.retry_policy != RetryPolicy.APPLICATION:
        raise unsupported(app_name, "Role.retry_policy", f"of {where} is {role.retry_policy.name}")
    if role.workspace:
        raise unsupported(app_name, "Role.workspace", f"of {where} is set ({role.workspace})")
    if role.overrides:
        raise unsupported(app_name, "Role.overrides", f"of {where} is {sorted(role.overrides)}")
