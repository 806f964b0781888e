"""Turns a step, the parameter values and the upstream results into an AppDef (private)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from torchx.workflow._template import Ref, render
from torchx.workflow.model import Pipeline

if TYPE_CHECKING:
    from torchx.runner.launch import LaunchRequest

__all__ = ["Resolver", "build_step", "render_value"]


@dataclass
class Resolver:
    """Resolves ``{{ ... }}`` references for one run.

    Attributes:
        pipeline: the pipeline.
        params: the parameter values of the run.
        results: ``{step: {field: value}}`` of finished steps (``outputs.NAME`` keys too).
        placeholder: return ``<steps.x.y>`` for unknown step results instead of raising.
    """

    pipeline: Pipeline
    params: Mapping[str, Any]
    results: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    placeholder: bool = False

    def __call__(self, ref: Ref) -> str:
        if ref.kind == "params":
            return _text(self.params[ref.name])
        if ref.kind == "pipeline":
            if ref.name == "dir":
                src = self.pipeline.source
                return os.path.dirname(os.path.abspath(src)) if src else os.getcwd()
            return self.pipeline.name
        value = self.results.get(ref.name, {}).get(ref.field)
        if value is None:
            if self.placeholder:
                return f"<{ref.expr}>"
            raise ValueError(f"`{ref.text}` is not known yet: step `{ref.name}` has not run")
        return value


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return "" if value is None else str(value)


def render_value(value: Any, resolve: Resolver) -> Any:
    """Renders every string inside ``value`` (lists and dicts walked).

    Args:
        value: a str, list, dict or scalar.
        resolve: the run's resolver.
    """
    if isinstance(value, str):
        return render(value, resolve)
    if isinstance(value, Mapping):
        return {k: render_value(v, resolve) for k, v in value.items()}
    if isinstance(value, list):
        return [render_value(v, resolve) for v in value]
    return value


def build_step(
    pipeline: Pipeline,
    name: str,
    resolve: Resolver,
    component_defaults: Mapping[str, Mapping[str, str]],
) -> LaunchRequest:
    """Renders step ``name`` and returns the launch request to submit for it.

    The AppDef is built here (``torchx.runner.launch.build_app``: the KFP launcher ships it as
    JSON); the request carries it with the scheduler, run options and the tracker parent (the
    parent step's run).

    Args:
        pipeline: the validated pipeline.
        name: the step.
        resolve: the run's resolver (upstream results filled).
        component_defaults: ``[component:NAME]`` defaults.
    """
    from torchx.runner.launch import LaunchRequest, build_app
    from torchx.workflow._plan import parent_of

    step = pipeline.effective(name)
    r = step.model_copy(update={f: render_value(getattr(step, f), resolve) for f in _RENDERED})
    app = build_app(
        LaunchRequest(
            component=r.component,
            component_args=r.args if r.component else None,
            app=r.app,
            image=r.image,
            resource=r.resource,
            max_retries=r.max_retries,
            retry_policy=r.retry_policy,
            env=r.env,
        ),
        component_defaults,
    )
    parent = parent_of(pipeline, name)
    parent_run = resolve.results.get(parent, {}).get("tracker_run_id") if parent else None
    return LaunchRequest(
        app=app, scheduler=r.scheduler, cfg=dict(r.cfg), parent_run_id=parent_run or None
    )


_RENDERED = ("args", "scheduler", "cfg", "resource", "image", "env")
