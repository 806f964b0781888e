"""The plan of a pipeline: its references, run order, tracker parents and rendering.

Every runner of a :class:`torchx.workflow.Pipeline` uses this module, so the rules are
written once: the local executor (``torchx pipeline run``), the Airflow adapter
(``torchx_airflow.dag_from_pipeline``) and the KFP adapter (``torchx_kfp.pipeline_from_workflow``).

- References: a pipeline string holds ``{{ params.NAME }}``, ``{{ steps.STEP.FIELD }}``
  (FIELD one of :data:`STEP_FIELDS` or ``outputs.NAME``), ``{{ pipeline.dir }}`` or
  ``{{ pipeline.name }}`` (:func:`find_refs`, :func:`step_refs`, :func:`has_refs`).
- Order: :func:`order` (run order), :func:`dependencies` (direct upstream steps),
  :func:`referenced_steps` (the steps whose results a step's strings use).
- Tracker lineage: :func:`parent_of` (whose run is a step's parent run).
- Rendering: a :class:`Renderer` renders a string, list or dict with the plan's rules and two
  callbacks from the runner: what a parameter becomes (a value locally, a Jinja expression in
  Airflow, a pipeline input in KFP) and what a step reference becomes (a value locally, an
  XCom pull in Airflow, a task output in KFP). :class:`ValueRenderer` is the one for known
  values (the local executor, a KFP launcher task); :func:`build_step` turns a step into the
  launch request to submit.

Example::

    from torchx.workflow.plan import Renderer, order

    jinja = Renderer(pipeline, lambda p: f"{{{{ params.{p} }}}}", lambda ref: f"<{ref.expr}>")
    for name in order(pipeline):
        print(name, jinja.render_value(pipeline.effective(name).args))
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Optional

from torchx.workflow._graph import (
    TEMPLATED_FIELDS,
    direct_upstream,
    step_refs,
    strings_of,
    topo_order,
    upstream,
)
from torchx.workflow._template import STEP_FIELDS, Ref, TemplateError, find_refs, render

if TYPE_CHECKING:
    from torchx.runner.launch import LaunchRequest
    from torchx.workflow.model import Pipeline

__all__ = [
    "STEP_FIELDS",
    "ParamFn",
    "Ref",
    "Renderer",
    "StepFn",
    "TemplateError",
    "ValueRenderer",
    "build_step",
    "dependencies",
    "find_refs",
    "has_refs",
    "order",
    "parent_of",
    "referenced_steps",
    "render_value",
    "step_refs",
    "strings_of",
]

ParamFn = Callable[[str], str]
"""What ``{{ params.NAME }}`` becomes, given NAME."""

StepFn = Callable[[Ref], str]
"""What ``{{ steps.STEP.FIELD }}`` becomes, given the reference."""


def dependencies(pipeline: Pipeline) -> dict[str, list[str]]:
    """Returns ``{step: [direct upstream steps]}`` (redundant edges removed).

    Args:
        pipeline: a validated pipeline (no cycles).
    """
    return direct_upstream(upstream(pipeline.steps))


def order(pipeline: Pipeline) -> list[str]:
    """Returns the steps in run order (upstream first, else definition order).

    Args:
        pipeline: a validated pipeline.
    """
    return topo_order(upstream(pipeline.steps))


def parent_of(pipeline: Pipeline, name: str) -> Optional[str]:
    """Returns the step whose run is the tracker parent of ``name`` (None for a root step).

    The step's ``parent`` if it names one, else its first direct upstream step.

    Args:
        pipeline: a validated pipeline.
        name: the step.
    """
    step = pipeline.steps[name]
    if step.parent:
        return step.parent
    direct = dependencies(pipeline)[name]
    return direct[0] if direct else None


def has_refs(value: Any) -> bool:
    """Whether a string inside ``value`` (lists and dicts walked) holds a reference.

    Args:
        value: a str, list, dict or scalar.
    """
    return any(find_refs(text) for _, text in strings_of(value))


def _declared(pipeline: Pipeline, ref: Ref) -> str:
    """The declared output ``ref`` (``steps.STEP.outputs.NAME``) names."""
    return pipeline.steps[ref.name].outputs[ref.field.partition(".")[2]]


def referenced_steps(pipeline: Pipeline, name: str) -> list[str]:
    """Returns the other steps whose results step ``name``'s strings use, in order found.

    A reference to a declared output counts the step that declares it and the steps that
    output's own text references.

    Args:
        pipeline: a validated pipeline.
        name: the step.
    """
    found: list[str] = []
    todo = [ref for _, ref in step_refs(pipeline.steps[name])]
    while todo:
        ref = todo.pop()
        if ref.kind != "steps" or (ref.name == name and not ref.field.startswith("outputs.")):
            continue
        if ref.name != name and ref.name not in found:
            found.append(ref.name)
        if ref.field.startswith("outputs."):
            todo += [r for r in find_refs(_declared(pipeline, ref)) if r.name != ref.name]
    return found


def _pipeline_attr(pipeline: Pipeline, attr: str) -> str:
    """``pipeline.dir`` (the pipeline file's directory, else the cwd) or ``pipeline.name``."""
    if attr == "dir":
        src = pipeline.source
        return os.path.dirname(os.path.abspath(src)) if src else os.getcwd()
    return pipeline.name


def render_value(value: Any, resolve: Callable[[Ref], str]) -> Any:
    """Renders every string inside ``value`` (lists and dicts walked; other values kept).

    Args:
        value: a str, list, dict or scalar.
        resolve: gives the text of a reference (e.g. a :class:`Renderer`).

    Raises:
        TemplateError: an expression is not a supported reference.
    """
    if isinstance(value, str):
        return render(value, resolve)
    if isinstance(value, Mapping):
        return {k: render_value(v, resolve) for k, v in value.items()}
    if isinstance(value, list):
        return [render_value(v, resolve) for v in value]
    return value


class Renderer:
    """Renders pipeline strings for one runner: the plan's rules, the runner's callbacks.

    ``{{ pipeline.dir }}`` and ``{{ pipeline.name }}`` are the same for every runner. With
    ``expand_outputs``, ``{{ steps.S.outputs.NAME }}`` is replaced by S's declared output,
    itself rendered (so ``step`` only sees ``app_handle``/``app_id``/``tracker_run_id``/
    ``state``); without it, ``step`` is given the output reference too.

    Args:
        pipeline: the pipeline.
        param: what ``{{ params.NAME }}`` becomes, given NAME.
        step: what ``{{ steps.STEP.FIELD }}`` becomes, given the reference.
        expand_outputs: expand declared outputs in place.
    """

    def __init__(
        self, pipeline: Pipeline, param: ParamFn, step: StepFn, *, expand_outputs: bool = True
    ) -> None:
        self.pipeline = pipeline
        self._param = param
        self._step = step
        self._expand = expand_outputs

    def __call__(self, ref: Ref) -> str:
        """Returns the text of one reference."""
        if ref.kind == "params":
            return self._param(ref.name)
        if ref.kind == "pipeline":
            return _pipeline_attr(self.pipeline, ref.name)
        if self._expand and ref.field.startswith("outputs."):
            return self.render(_declared(self.pipeline, ref))
        return self._step(ref)

    def render(self, text: str) -> str:
        """Returns ``text`` with every reference replaced.

        Raises:
            TemplateError: an expression is not a supported reference.
        """
        return render(text, self)

    def render_value(self, value: Any) -> Any:
        """Renders every string inside ``value`` (see :func:`render_value`)."""
        return render_value(value, self)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return "" if value is None else str(value)


class ValueRenderer(Renderer):
    """Renders with known values: the parameters of a run and its finished steps' results.

    Args:
        pipeline: the pipeline.
        params: the parameter values of the run.
        results: ``{step: {field: value}}`` of finished steps (``outputs.NAME`` keys too).
        placeholder: render an unknown step result as ``<steps.x.y>`` instead of raising.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        params: Mapping[str, Any],
        results: Optional[Mapping[str, Mapping[str, str]]] = None,
        placeholder: bool = False,
    ) -> None:
        super().__init__(pipeline, self._param_text, self._result, expand_outputs=False)
        self.params = params
        self.results: Mapping[str, Mapping[str, str]] = results if results is not None else {}
        self.placeholder = placeholder

    def _param_text(self, name: str) -> str:
        return _text(self.params[name])

    def _result(self, ref: Ref) -> str:
        value = self.results.get(ref.name, {}).get(ref.field)
        if value is None:
            if self.placeholder:
                return f"<{ref.expr}>"
            raise ValueError(f"`{ref.text}` is not known yet: step `{ref.name}` has not run")
        return value

    def outputs_of(self, name: str) -> dict[str, str]:
        """Returns step ``name``'s declared outputs, rendered (its own results known)."""
        return self.render_value(dict(self.pipeline.steps[name].outputs))


def build_step(
    pipeline: Pipeline,
    name: str,
    resolve: ValueRenderer,
    component_defaults: Mapping[str, Mapping[str, str]],
) -> LaunchRequest:
    """Renders step ``name`` and returns the launch request to submit for it.

    The AppDef is built here (``torchx.runner.launch.build_app``: the KFP launcher ships it as
    JSON); the request carries it with the scheduler, run options and the tracker parent (the
    parent step's ``tracker_run_id``).

    Args:
        pipeline: the validated pipeline.
        name: the step.
        resolve: the run's renderer (upstream results filled).
        component_defaults: ``[component:NAME]`` defaults.
    """
    from torchx.runner.launch import (  # lazy: ~1 ms, more as runner grows; a DAG parse skips it
        LaunchRequest,
        build_app,
    )

    step = pipeline.effective(name)
    r = step.model_copy(
        update={f: resolve.render_value(getattr(step, f)) for f in TEMPLATED_FIELDS}
    )
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
