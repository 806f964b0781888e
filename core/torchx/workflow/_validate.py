"""Checks of a pipeline beyond its schema (private): names, references, graph, params."""

from __future__ import annotations

import re
from typing import Any

from torchx.workflow._graph import TEMPLATED_FIELDS, find_cycle, strings_of, upstream
from torchx.workflow._template import Ref, TemplateError, find_refs
from torchx.workflow._yaml import Lines
from torchx.workflow.errors import Issue, did_you_mean
from torchx.workflow.model import Param, Pipeline

__all__ = ["check_pipeline", "coerce_param", "line_of"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def line_of(lines: Lines, path: tuple[Any, ...]) -> int:
    """Returns the line of ``path`` or of its closest ancestor (0 when unknown).

    Args:
        lines: the line map of the pipeline file.
        path: a path of keys and indices.
    """
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return lines.get((), 0)


def coerce_param(name: str, param: Param, value: Any) -> Any:
    """Returns ``value`` converted to the parameter's type, checked against its bounds.

    Args:
        name: the parameter name.
        param: its definition.
        value: a value (strings from the command line are converted).

    Raises:
        ValueError: the value does not fit the parameter.
    """
    try:
        if param.type == "integer" and not isinstance(value, bool):
            number = float(value)  # "5", 5 and 5.0 (KFP passes integers as floats)
            if not number.is_integer():
                raise ValueError(value)
            value = int(number)
        elif param.type == "number" and not isinstance(value, bool):
            value = float(value)
        elif param.type == "boolean" and isinstance(value, str):
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(value)
            value = value.lower() in ("true", "1", "yes")
        elif param.type == "string":
            value = str(value)
    except (TypeError, ValueError):
        raise ValueError(f"parameter `{name}` must be {param.type}, got `{value}`") from None
    if param.minimum is not None and value < param.minimum:
        raise ValueError(f"parameter `{name}` must be >= {param.minimum:g}, got {value}")
    if param.maximum is not None and value > param.maximum:
        raise ValueError(f"parameter `{name}` must be <= {param.maximum:g}, got {value}")
    if param.enum is not None and value not in param.enum:
        raise ValueError(f"parameter `{name}` must be one of {param.enum}, got `{value}`")
    return value


def _check_params(pipeline: Pipeline, lines: Lines) -> list[Issue]:
    issues = []
    for name, param in pipeline.params.items():
        line = line_of(lines, ("params", name))
        if not _NAME.fullmatch(name):
            issues.append(Issue(f"parameter name `{name}` is not an identifier", "", line))
        elif param.default is not None:
            try:
                coerce_param(name, param, param.default)
            except ValueError as e:
                issues.append(Issue(f"default of {e}", "", line))
    return issues


def _check_ref(pipeline: Pipeline, step: str, field: str, ref: Ref) -> str:
    steps = pipeline.steps
    if ref.kind == "params" and ref.name not in pipeline.params:
        hint = did_you_mean(ref.name, pipeline.params)
        return f"`{ref.text}` names an unknown parameter `{ref.name}`{hint}; declare it in params"
    if ref.kind != "steps":
        return ""
    if ref.name not in steps:
        return f"`{ref.text}` names an unknown step `{ref.name}`{did_you_mean(ref.name, steps)}"
    if ref.name == step and field != "outputs":
        return f"`{ref.text}` refers to the step itself; only its `outputs` may do that"
    if ref.field.startswith("outputs."):
        out = ref.field.partition(".")[2]
        declared = steps[ref.name].outputs
        if out not in declared:
            hint = did_you_mean(out, declared)
            return (
                f"missing input `{ref.text}`: step `{ref.name}` declares no output `{out}`{hint};"
                f" add it to the outputs of `{ref.name}`"
            )
        if ref.name == step:
            return f"`{ref.text}` makes output of step `{step}` refer to its own outputs"
    return ""


def _located_refs(step: Any, name: str, lines: Lines) -> tuple[list[Any], list[Issue]]:
    refs, issues = [], []
    for field in (*TEMPLATED_FIELDS, "outputs"):
        for path, text in strings_of(getattr(step, field), (field,)):
            try:
                refs += [(path, ref) for ref in find_refs(text)]
            except TemplateError as e:
                issues.append(Issue(str(e), name, line_of(lines, ("steps", name, *path))))
    return refs, issues


def _check_step_refs(pipeline: Pipeline, name: str, lines: Lines) -> list[Issue]:
    step = pipeline.steps[name]
    refs, issues = _located_refs(step, name, lines)
    for path, ref in refs:
        msg = _check_ref(pipeline, name, path[0], ref)
        if msg:
            issues.append(Issue(msg, name, line_of(lines, ("steps", name, *path))))
    for i, dep in enumerate(step.depends_on):
        if dep not in pipeline.steps or dep == name:
            why = "itself" if dep == name else f"an unknown step `{dep}`"
            hint = did_you_mean(dep, [s for s in pipeline.steps if s != name])
            line = line_of(lines, ("steps", name, "depends_on", i))
            issues.append(Issue(f"`depends_on` names {why}{hint}", name, line))
    if step.parent is not None and (step.parent not in pipeline.steps or step.parent == name):
        hint = did_you_mean(step.parent, [s for s in pipeline.steps if s != name])
        line = line_of(lines, ("steps", name, "parent"))
        issues.append(Issue(f"`parent` names an unknown step `{step.parent}`{hint}", name, line))
    return issues


def _check_defaults(pipeline: Pipeline, lines: Lines) -> list[Issue]:
    issues = []
    for field in ("scheduler", "resource", "image"):
        for ref in find_refs(getattr(pipeline.defaults, field) or ""):
            if ref.kind == "steps":
                line = line_of(lines, ("defaults", field))
                issues.append(Issue(f"defaults cannot refer to a step (`{ref.text}`)", "", line))
    return issues


def check_pipeline(pipeline: Pipeline, lines: Lines) -> list[Issue]:
    """Returns the structural issues: names, parameters, references, dependencies, cycles.

    Args:
        pipeline: the parsed pipeline.
        lines: its line map (empty for Python pipelines).
    """
    issues = _check_params(pipeline, lines)
    issues += _check_defaults(pipeline, lines)
    for name in pipeline.steps:
        if not _NAME.fullmatch(name):
            line = line_of(lines, ("steps", name))
            issues.append(Issue("step names must be identifiers (letters, digits, _)", name, line))
        issues += _check_step_refs(pipeline, name, lines)
    if not issues:
        cycle = find_cycle(upstream(pipeline.steps))
        if cycle:
            line = line_of(lines, ("steps", cycle[0]))
            text = " -> ".join(cycle)
            issues.append(
                Issue(f"dependency cycle {text} (each feeds the next); remove one", cycle[0], line)
            )
    return issues
