"""AppDef <-> JSON, so a launcher task receives the exact AppDef that was compiled."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from torchx.specs import api
from torchx.specs.api import AppDef, Role

__all__ = ["app_from_json", "app_to_json"]

_MOUNT_TYPES = ("BindMount", "VolumeMount", "DeviceMount")


def _role_dict(role: Role) -> dict[str, Any]:
    if role.overrides:
        raise ValueError(
            f"role `{role.name}` has scheduler overrides ({sorted(role.overrides)}), which are"
            " Python objects a launcher task cannot receive; set them in a component file and"
            " launch it by name instead"
        )
    data = {f.name: getattr(role, f.name) for f in dataclasses.fields(role)}
    data["resource"] = dataclasses.asdict(role.resource)
    data["retry_policy"] = role.retry_policy.value
    data["mounts"] = [{"type": type(m).__name__, **dataclasses.asdict(m)} for m in role.mounts]
    data["workspace"] = str(role.workspace) if role.workspace else None
    del data["overrides"]
    return data


def app_to_json(app: AppDef) -> str:
    """Serializes an AppDef (roles, resources, mounts, metadata) as JSON."""
    roles = [_role_dict(r) for r in app.roles]
    return json.dumps({"name": app.name, "metadata": app.metadata, "roles": roles}, default=str)


def _role(data: dict[str, Any]) -> Role:

    data = dict(data)
    data["resource"] = api.Resource(**data["resource"])
    data["retry_policy"] = api.RetryPolicy(data["retry_policy"])
    mounts = []
    for m in data["mounts"]:
        kind = m.pop("type")
        if kind not in _MOUNT_TYPES:
            raise ValueError(f"unknown mount type `{kind}` in a serialized AppDef")
        mounts.append(getattr(api, kind)(**m))
    data["mounts"] = mounts
    ws = data.pop("workspace", None)
    role = api.Role(**data)
    if ws:
        role.workspace = api.Workspace.from_str(ws)
    return role


def app_from_json(text: str) -> AppDef:
    """Rebuilds the AppDef that :func:`app_to_json` serialized."""
    data = json.loads(text)
    return AppDef(
        name=data["name"],
        roles=[_role(r) for r in data["roles"]],
        metadata=dict(data.get("metadata") or {}),
    )
