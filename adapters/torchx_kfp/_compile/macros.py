"""TorchX macros and component inputs -> KFP placeholders in a container's argv and env."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from torchx.specs.api import AppDef, Role
    from torchx_kfp._compile.params import ComponentInput

__all__ = [
    "KFP_SCHEDULER",
    "RANK0_ENV",
    "app_id_expr",
    "has_placeholder",
    "job_id_expr",
    "substitute_macros",
    "to_placeholders",
]

KFP_SCHEDULER = "kfp"
"""The scheduler part of a container step's run id (``kfp://<pipeline job>/<app id>``)."""
RANK0_ENV = "TORCHX_RANK0_HOST"

# KFP runtime placeholders (kfp.dsl.PIPELINE_JOB_ID_PLACEHOLDER, PIPELINE_TASK_ID_PLACEHOLDER),
# spelled out so building a spec does not import kfp.dsl
_JOB_UUID = "{{$.pipeline_job_uuid}}"
_TASK_UUID = "{{$.pipeline_task_uuid}}"

Element = Union[str, dict[str, Any]]


def app_id_expr(app: AppDef) -> str:
    """``${app_id}`` for a container step: the app name and the KFP task's uuid."""
    name = re.sub(r"[^a-z0-9-]+", "-", app.name.lower()).strip("-") or "app"
    return f"{name}-{_TASK_UUID}"


def job_id_expr(app: AppDef) -> str:
    """``TORCHX_JOB_ID`` (the tracker run id) of a container step."""
    return f"{KFP_SCHEDULER}://{_JOB_UUID}/{app_id_expr(app)}"


def has_placeholder(value: str) -> bool:
    """Whether ``value`` holds a KFP runtime placeholder (resolved in argv, not in env)."""
    return "{{$" in value


def substitute_macros(app: AppDef, role: Role) -> Role:
    """Returns a copy of ``role`` with the TorchX macros replaced by their KFP values.

    ``${app_id}`` -> ``<app name>-{{$.pipeline_task_uuid}}``, ``${replica_id}`` -> ``0``,
    ``${img_root}`` -> ``""``, ``${rank0_env}`` -> ``TORCHX_RANK0_HOST`` (set to
    ``localhost`` in the env: one task is one node).
    """
    from torchx.specs.api import macros

    values = macros.Values(
        img_root="", app_id=app_id_expr(app), replica_id="0", rank0_env=RANK0_ENV
    )
    new = values.apply(role)
    new.env.setdefault(RANK0_ENV, "localhost")
    return new


def to_placeholders(text: str, inputs: Sequence[ComponentInput]) -> Element:
    """Replaces input probe tokens in ``text`` by KFP YAML placeholders.

    Returns the text unchanged, ``{"inputValue": name}`` when it is exactly one token, or
    ``{"concat": [...]}`` mixing literal parts and input values.
    """
    by_token = {i.token: i.name for i in inputs if i.token in text}
    if not by_token:
        return text
    pattern = "(" + "|".join(re.escape(t) for t in sorted(by_token, key=len, reverse=True)) + ")"
    parts: list[Element] = []
    for piece in re.split(pattern, text):
        if piece in by_token:
            parts.append({"inputValue": by_token[piece]})
        elif piece:
            parts.append(piece)
    return parts[0] if len(parts) == 1 else {"concat": parts}
