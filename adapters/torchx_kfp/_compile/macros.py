"""TorchX macros and component inputs -> placeholders the KFP backend resolves in argv.

The open-source KFP backend resolves, inside container command/args, input parameters
(``{{$.inputs.parameters['x']}}``, embedded anywhere in a string), output-parameter files,
artifact uris/paths and ``{{$}}``; nothing else (docs/kfp-backend.md). Run and task ids
(``{{$.pipeline_job_uuid}}`` ...) are resolved only as the constant value of a *task input*,
so they reach the container as the component inputs :data:`RUN_INPUTS`, passed by every
task with the SDK's placeholders as values.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

from torchx.specs.api import macros
from torchx_kfp._compile.params import ComponentInput, probe_token

if TYPE_CHECKING:
    from torchx.specs.api import AppDef, Role
    from torchx_kfp._compile.params import ComponentInput

__all__ = [
    "KFP_SCHEDULER",
    "RANK0_ENV",
    "RUN_INPUTS",
    "app_id_expr",
    "has_input",
    "input_placeholder",
    "job_id_expr",
    "run_inputs",
    "substitute_macros",
    "to_placeholders",
]

KFP_SCHEDULER = "kfp"
"""The scheduler part of a container step's run id (``kfp://<pipeline job>/<app id>``)."""
RANK0_ENV = "TORCHX_RANK0_HOST"

RUN_INPUTS = {
    "pipeline_job_uuid": "{{$.pipeline_job_uuid}}",
    "pipeline_task_name": "{{$.pipeline_task_name}}",
    "pipeline_task_uuid": "{{$.pipeline_task_uuid}}",
}
"""Component inputs carrying run/task ids: ``{input: the value every task passes}``.

The values are ``kfp.dsl.PIPELINE_JOB_ID_PLACEHOLDER``, ``PIPELINE_TASK_NAME_PLACEHOLDER``
and ``PIPELINE_TASK_ID_PLACEHOLDER``, spelled out so building a spec does not import
kfp.dsl. On the backend the task uuid is the enclosing DAG's execution id (the same for
sibling tasks), so an app id joins it with the task name, which is unique in its DAG.
"""

Element = Union[str, dict[str, Any]]


def run_inputs() -> list[ComponentInput]:
    """The :data:`RUN_INPUTS` as required string inputs (with their probe tokens)."""
    return [ComponentInput(n, "String", None, probe_token(n, "String")) for n in RUN_INPUTS]


def _token(name: str) -> str:

    return probe_token(name, "String")


def app_id_expr(app: AppDef) -> str:
    """``${app_id}`` for a container step: ``<task name>-<task uuid>`` (as input tokens)."""
    del app  # the task name already is the (sanitized) app name, made unique in its DAG
    return f"{_token('pipeline_task_name')}-{_token('pipeline_task_uuid')}"


def job_id_expr(app: AppDef) -> str:
    """``TORCHX_JOB_ID`` (the tracker run id) of a container step (with input tokens)."""
    return f"{KFP_SCHEDULER}://{_token('pipeline_job_uuid')}/{app_id_expr(app)}"


def input_placeholder(name: str) -> str:
    """The placeholder of input ``name`` that the backend substitutes anywhere in an arg."""
    return "{{$.inputs.parameters['" + name + "']}}"


def has_input(text: str, inputs: Sequence[ComponentInput]) -> bool:
    """Whether ``text`` holds the probe token of one of ``inputs``."""
    return any(i.token in text for i in inputs)


def substitute_macros(app: AppDef, role: Role) -> Role:
    """Returns a copy of ``role`` with the TorchX macros replaced by their KFP values.

    ``${app_id}`` -> ``<task name>-<task uuid>`` (the :data:`RUN_INPUTS` tokens),
    ``${replica_id}`` -> ``0``, ``${img_root}`` -> ``""``, ``${rank0_env}`` ->
    ``TORCHX_RANK0_HOST`` (set to ``localhost`` in the env: one task is one node).

    What ``macros.Values.apply`` substitutes (args, env values, strings in metadata), in new
    containers of a shallow copy: ``role`` belongs to the component's private AppDef, so the
    deep copy ``apply`` makes is not needed (a string without ``$`` is kept as it is, which
    is what ``string.Template.safe_substitute`` returns for it).
    """
    values = macros.Values(
        img_root="", app_id=app_id_expr(app), replica_id="0", rank0_env=RANK0_ENV
    )
    new = copy.copy(role)
    state = new.__dict__
    state["args"] = [_substitute(values, a) for a in state["args"]]
    state["env"] = {k: _substitute(values, v) for k, v in state["env"].items()}
    state["metadata"] = _substitute(values, state["metadata"])
    new.env.setdefault(RANK0_ENV, "localhost")
    return new


def _substitute(values: Any, value: Any) -> Any:
    """``macros.Values`` substitution of every string in ``value`` (lists and dicts walked)."""
    if isinstance(value, str):
        return values.substitute(value) if "$" in value else value
    if isinstance(value, dict):
        return {k: _substitute(values, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(values, v) for v in value]
    return value


def to_placeholders(text: str, inputs: Sequence[ComponentInput]) -> str:
    """Replaces input probe tokens in ``text`` by embedded input placeholders.

    The result is one string (never a Concat placeholder): ``"--x={{$.inputs.parameters['x']}}/y"``.
    """
    by_token = {i.token: i.name for i in inputs if i.token in text}
    if not by_token:
        return text
    pattern = "|".join(re.escape(t) for t in sorted(by_token, key=len, reverse=True))
    return re.sub(pattern, lambda m: input_placeholder(by_token[m.group(0)]), text)
