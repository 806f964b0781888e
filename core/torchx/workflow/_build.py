"""Turns a step, the parameter values and the upstream results into an AppDef (private)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Union

from torchx.workflow._template import Ref, render
from torchx.workflow.model import Pipeline, Step

if TYPE_CHECKING:
    from torchx.specs.api import AppDef

__all__ = ["Resolver", "StepLaunch", "build_step", "render_value"]


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


@dataclass
class StepLaunch:
    """What to submit for one step.

    Attributes:
        app: the AppDef (with the step's resource, image, env and retries applied).
        scheduler: the scheduler name.
        cfg: the scheduler run options.
        parent_run_id: the tracker parent run (the parent step's run), or None.
    """

    app: AppDef
    scheduler: str
    cfg: dict[str, Any]
    parent_run_id: Optional[str]


def component_app(
    component: str,
    args: Union[list[str], dict[str, Any]],
    component_defaults: Mapping[str, Mapping[str, str]],
) -> AppDef:
    """Materializes a component with CLI-style (list) or ``{param: value}`` arguments.

    Args:
        component: the component name.
        args: the rendered arguments.
        component_defaults: ``[component:NAME]`` defaults from ``.torchxconfig``.
    """
    from torchx.specs.builders import materialize_appdef
    from torchx.specs.finder import get_component

    fn = get_component(component).fn
    list_args = [str(a) for a in args] if isinstance(args, list) else []
    dict_args = dict(args) if isinstance(args, dict) else {}
    defaults = component_defaults.get(component)
    return materialize_appdef(fn, list_args, dict(defaults) if defaults else None, dict_args)


def apply_step(app: AppDef, step: Step) -> AppDef:
    """Applies the step's image, named resource, env and retries to every role, in place.

    Args:
        app: a private copy of the AppDef.
        step: the effective step (defaults filled, strings rendered).
    """
    from torchx.specs import RetryPolicy, resource

    for role in app.roles:
        if step.image:
            role.image = step.image
        if step.resource:
            role.resource = resource(h=step.resource)
        if step.max_retries is not None:
            role.max_retries = step.max_retries
        if step.retry_policy:
            role.retry_policy = RetryPolicy[step.retry_policy]
        role.env.update(step.env)
    return app


def build_step(
    pipeline: Pipeline,
    name: str,
    resolve: Resolver,
    component_defaults: Mapping[str, Mapping[str, str]],
) -> StepLaunch:
    """Renders step ``name`` and builds what to submit for it.

    Args:
        pipeline: the validated pipeline.
        name: the step.
        resolve: the run's resolver (upstream results filled).
        component_defaults: ``[component:NAME]`` defaults.
    """
    import copy

    from torchx.workflow._plan import parent_of

    step = pipeline.effective(name)
    rendered = step.model_copy(
        update={f: render_value(getattr(step, f), resolve) for f in _RENDERED}
    )
    if rendered.app is not None:
        app = copy.deepcopy(rendered.app)
    else:
        app = component_app(str(rendered.component), rendered.args, component_defaults)
    apply_step(app, rendered)
    parent = parent_of(pipeline, name)
    parent_run = resolve.results.get(parent, {}).get("tracker_run_id") if parent else None
    return StepLaunch(app, str(rendered.scheduler), dict(rendered.cfg), parent_run)


_RENDERED = ("args", "scheduler", "cfg", "resource", "image", "env")
