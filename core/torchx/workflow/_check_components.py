"""Checks against the TorchX registries (private): components, arguments, resources, schedulers."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from torchx.schedulers import get_scheduler_factories
from torchx.workflow._validate import line_of
from torchx.workflow._yaml import Lines
from torchx.workflow.errors import Issue, did_you_mean
from torchx.workflow.model import Pipeline
from torchx.workflow.plan import ValueRenderer

__all__ = ["check_registries"]


def _option_names(args: list[str], has_var: bool) -> tuple[list[tuple[int, str]], list[int]]:
    """Returns ``([(index, option name)], [indices of positional tokens])``.

    Like the component parser: ``--`` ends the options, and with ``*args`` the first
    positional token starts them (``utils.sh test -f x``: ``-f`` belongs to the command).
    """
    options: list[tuple[int, str]] = []
    positional: list[int] = []
    i = 0
    while i < len(args):
        tok = args[i]
        if tok == "--":
            break
        if tok.startswith("-") and len(tok) > 1 and not tok[1:2].isdigit():
            name = tok.lstrip("-").partition("=")[0]
            options.append((i, name))
            i += 1 if "=" in tok else 2
            continue
        positional.append(i)
        if has_var:
            break
        i += 1
    return options, positional


def _check_args(fn: Callable[..., Any], args: Any, defaults: Mapping[str, str]) -> list[Any]:
    """Returns ``[(path, message)]`` for bad or missing component arguments."""
    params = inspect.signature(fn).parameters
    names = [n for n, p in params.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL]
    has_var = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params.values())
    problems: list[Any] = []
    if isinstance(args, dict):
        given = list(args)
        located = [(("args", k), k) for k in given]
    else:
        options, positional = _option_names(args, has_var)
        given = [n for _, n in options]
        located = [(("args", i), n) for i, n in options]
        if positional and not has_var:
            i = positional[0]
            problems.append((("args", i), f"unexpected positional argument `{args[i]}`"))
    for path, name in located:
        if name not in names:
            hint = did_you_mean(name, names)
            problems.append(
                (
                    path,
                    f"unknown argument `{name}`{hint}; the component takes "
                    + ", ".join(f"--{n}" for n in names),
                )
            )
    for name, p in params.items():
        required = p.default is inspect.Parameter.empty and p.kind in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        )
        if required and name not in given and name not in defaults:
            problems.append((("args",), f"missing input: required argument `--{name}`"))
    return problems


def _check_component(pipeline: Pipeline, name: str, lines: Lines, cdefaults: Any) -> list[Issue]:
    from torchx.specs.finder import (  # lazy: ~12 ms; import torchx.workflow skips it
        get_component,
        get_components,
    )

    step = pipeline.steps[name]
    if step.component is None:
        return []
    base = ("steps", name)
    try:
        fn = get_component(step.component).fn
    except Exception as e:
        msg = str(e)
        if ":" not in step.component:
            hint = did_you_mean(step.component, get_components())
            msg = f"unknown component `{step.component}`{hint}; `torchx builtins` lists them"
        return [Issue(msg, name, line_of(lines, (*base, "component")))]
    defaults = cdefaults.get(step.component, {})
    return [
        Issue(msg, name, line_of(lines, (*base, *path)))
        for path, msg in _check_args(fn, step.args, defaults)
    ]


def _check_names(pipeline: Pipeline, name: str, lines: Lines) -> list[Issue]:
    from torchx.specs import named_resources  # lazy: ~10 ms; import torchx.workflow skips it

    step = pipeline.effective(name)
    resolve = ValueRenderer(pipeline, pipeline.param_defaults(), placeholder=True)
    issues = []
    own = pipeline.steps[name].scheduler
    sched = resolve.render_value(step.scheduler)
    schedulers = get_scheduler_factories()
    if "<" not in sched and sched not in schedulers:
        hint = did_you_mean(sched, schedulers)
        path = ("steps", name, "scheduler") if own else ("defaults", "scheduler")
        line = line_of(lines, path)
        issues.append(
            Issue(
                f"unknown scheduler `{sched}`{hint}; known: " + ", ".join(sorted(schedulers)),
                name,
                line,
            )
        )
    res = resolve.render_value(step.resource) if step.resource else None
    if res and "<" not in res and res not in named_resources:
        hint = did_you_mean(res, list(named_resources))
        own_res = pipeline.steps[name].resource
        where_path = ("steps", name, "resource") if own_res else ("defaults", "resource")
        issues.append(
            Issue(f"unknown named resource `{res}`{hint}", name, line_of(lines, where_path))
        )
    return issues


def check_registries(pipeline: Pipeline, lines: Lines) -> list[Issue]:
    """Returns issues with components, their arguments, named resources and schedulers.

    Args:
        pipeline: a structurally valid pipeline.
        lines: its line map.
    """
    from torchx.specs.torchxconfig import (  # lazy: ~3 ms; import torchx.workflow skips it
        TorchXConfig,
    )

    cdefaults = TorchXConfig.discover().component_defaults()
    issues: list[Issue] = []
    for name in pipeline.steps:
        issues += _check_component(pipeline, name, lines, cdefaults)
        issues += _check_names(pipeline, name, lines)
    return issues
