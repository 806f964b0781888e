"""The compile-time check: only placeholders the open-source KFP backend resolves.

Rules (kubeflow/pipelines ``backend/src/v2``; docs/kfp-backend.md has the details):

- container command/args (driver ``driver/util.go::resolveContainerArgs``, launcher
  ``component/launcher_v2.go::compileCmdAndArgs`` and ``getPlaceholders``): ``{{$}}``,
  ``{{$.inputs.parameters['x']}}`` anywhere in a string, ``{{$.outputs.parameters['x']
  .output_file}}``, ``{{$.inputs|outputs.artifacts['x'].uri|path}}``, and an element that is
  a whole ``{"IfPresent": ...}`` clause. ``{"Concat": ...}`` is implemented nowhere (a TODO
  in ``launcher_v2.go``): the container would receive the JSON text. In the executable
  (``command[0]``) only ``{{$}}`` is replaced.
- container env: no placeholder is resolved (neither the driver nor the launcher template it).
- task inputs (``driver/resolve.go::resolveInputParameter``): a constant is resolved only when
  it is exactly a run placeholder (``{{$.pipeline_job_uuid}}`` ...). A constant embedding
  ``{{$.inputs.parameters['p']}}`` (an f-string of a channel, a list or dict holding
  channels) reaches the executor input as literal text; it is resolved only because the
  launcher's substring pass also runs over ``{{$}}`` and over args the driver already
  expanded, and only for ``p`` an input of the same task. Anything else embedded in a
  constant (a run placeholder inside a string, an output placeholder) stays literal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from torchx_kfp._compile.passed_inputs import check_passed_inputs

__all__ = [
    "RUN_PLACEHOLDERS",
    "check_container",
    "check_pipeline_spec",
    "unresolved",
]

RUN_PLACEHOLDERS = frozenset(
    {
        "{{$.pipeline_job_name}}",
        "{{$.pipeline_job_resource_name}}",
        "{{$.pipeline_job_uuid}}",
        "{{$.pipeline_task_name}}",
        "{{$.pipeline_task_uuid}}",
        "{{$.pipeline_job_create_time_utc}}",
        "{{$.pipeline_job_schedule_time_utc}}",
    }
)
"""Task-input constants the backend driver replaces (only as the whole constant)."""

_ANY = re.compile(r"\{\{\$.*?\}\}|\{\{\$")
_ARG = re.compile(
    r"\{\{\$(?:"
    r"|\.inputs\.parameters\['(?P<in_param>[^']+)'\]"
    r"|\.outputs\.parameters\['(?P<out_param>[^']+)'\]\.output_file"
    r"|\.inputs\.artifacts\['(?P<in_art>[^']+)'\]\.(?:uri|path)"
    r"|\.outputs\.artifacts\['(?P<out_art>[^']+)'\]\.(?:uri|path)"
    r")\}\}"
)
_HINT = (
    "the KFP backend resolves only {{$}}, {{$.inputs.parameters['x']}},"
    " output-parameter files and artifact uri/path in command/args (docs/kfp-backend.md)"
)


def unresolved(text: str, inputs: Iterable[str] = (), outputs: Iterable[str] = ()) -> list[str]:
    """The placeholders in one command/args string that the backend would leave literal.

    Args:
        text: the element.
        inputs: the component's input names (parameters and artifacts); empty: any name.
        outputs: the component's output names; empty: any name.
    """
    if "{{$" not in text and '{"' not in text:
        return []  # no placeholder at all (most elements)
    ins, outs = set(inputs), set(outputs)
    bad = ['{"Concat"'] if '{"Concat"' in text else []
    if '{"IfPresent"' in text and not text.lstrip().startswith('{"IfPresent"'):
        bad.append('{"IfPresent"')
    for found in _ANY.findall(text):
        match = _ARG.fullmatch(found)
        if match is None:
            bad.append(found)
            continue
        name_in = match.group("in_param") or match.group("in_art")
        name_out = match.group("out_param") or match.group("out_art")
        if (name_in and ins and name_in not in ins) or (name_out and outs and name_out not in outs):
            bad.append(found)
    return bad


def _error(task: str, where: str, placeholder: str, detail: str = _HINT) -> ValueError:
    return ValueError(f"KFP task `{task}`: {where} holds `{placeholder}`, which {detail}")


def check_container(
    task: str,
    command: Sequence[str],
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    inputs: Iterable[str] = (),
    outputs: Iterable[str] = (),
) -> None:
    """Raises when a container spec holds a placeholder the backend does not resolve.

    Args:
        task: the task or component name (for the message).
        command: the container command, placeholders as strings.
        args: the container args.
        env: the container env (no placeholder is resolved there).
        inputs: the component's input names (empty: not checked).
        outputs: the component's output names (empty: not checked).

    Raises:
        ValueError: naming the task, where, and the placeholder.
    """
    ins, outs = set(inputs), set(outputs)
    if command and "{{$" in command[0] and command[0] != "{{$}}":
        raise _error(task, "the executable (command[0])", command[0], "only {{$}} is resolved")
    for where, items in (("command", command), ("args", args)):
        for k, text in enumerate(items):
            bad = unresolved(text, ins, outs)
            if bad:
                raise _error(task, f"{where}[{k}] `{text[:80]}`", bad[0])
    for key, value in (env or {}).items():
        if "{{$" in value or '{"Concat"' in value:
            raise _error(task, f"env {key}", value, "is never resolved in env: pass it in args")


_INPUT = re.compile(r"\{\{\$\.inputs\.parameters\['([^']+)'\]\}\}")


def _constant_bad(value: Any, inputs: Iterable[str]) -> str | None:
    """The first placeholder in a task-input constant that would stay literal, or None."""
    if isinstance(value, str):
        if value in RUN_PLACEHOLDERS:
            return None
        names = set(inputs)
        for found in _ANY.findall(value):
            match = _INPUT.fullmatch(found)
            if match is None or match.group(1) not in names:
                return found
        return None
    items = list(value.values()) if isinstance(value, Mapping) else value
    if isinstance(items, list):
        for item in items:
            bad = _constant_bad(item, inputs)
            if bad is not None:
                return bad
    return None


def _task_constants(task: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    for name, spec in (task.get("inputs", {}).get("parameters") or {}).items():
        runtime = spec.get("runtimeValue")
        if runtime is not None and "constant" in runtime:
            yield name, runtime["constant"]


def check_pipeline_spec(ir: Mapping[str, Any]) -> None:
    """Raises when a compiled pipeline (IR as a dict) holds what the backend leaves literal.

    Checks every executor's container (with its component's inputs and outputs), that every
    task passes each input its container references outside an IfPresent guard
    (:func:`~torchx_kfp._compile.passed_inputs.check_passed_inputs`), and every task's input
    constants, in the root DAG and nested DAGs.

    Raises:
        ValueError: naming the task (or executor), where, and the placeholder.
    """
    components = dict(ir.get("components") or {})
    executors = (ir.get("deploymentSpec") or {}).get("executors") or {}
    for comp_name, comp in components.items():
        container = (executors.get(comp.get("executorLabel", "")) or {}).get("container")
        if container is not None:
            defs_in, defs_out = comp.get("inputDefinitions", {}), comp.get("outputDefinitions", {})
            check_container(
                comp_name.removeprefix("comp-"),
                container.get("command") or [],
                container.get("args") or [],
                {e["name"]: e.get("value", "") for e in container.get("env") or []},
                [*defs_in.get("parameters", {}), *defs_in.get("artifacts", {})],
                [*defs_out.get("parameters", {}), *defs_out.get("artifacts", {})],
            )
    check_passed_inputs(ir)
    dags = [("root", ir.get("root") or {})] + list(components.items())
    for _, comp in dags:
        for key, task in ((comp.get("dag") or {}).get("tasks") or {}).items():
            names = list(task.get("inputs", {}).get("parameters") or {})
            for name, constant in _task_constants(task):
                bad = _constant_bad(constant, names)
                if bad is not None:
                    raise _error(
                        key,
                        f"input `{name}` (a constant)",
                        bad,
                        "the KFP backend passes as literal text: it resolves a task-input"
                        " constant only when it is exactly a run placeholder; pass the"
                        " value as its own input",
                    )
