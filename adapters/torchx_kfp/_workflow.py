"""``pipeline_from_workflow``: a ``torchx.workflow`` pipeline as a KFP v2 pipeline.

Every step is one KFP task, named like the step:

- a step whose app one KFP task can express (one role, one replica, no ports, ...; the KFP
  adapter's rules, :func:`torchx_kfp.component_from_app`) and whose strings reference no
  parameter or upstream step becomes a container task (``mode="auto"`` or ``"container"``);
- every other step runs through a launcher task (``mode="launcher"`` forces it for all):
  the task renders the step with the run's parameters and the upstream steps' outputs, the
  same way ``torchx pipeline run`` does, and submits it with a TorchX scheduler through the
  KFP adapter's launcher (log streaming, structured errors, cancel on SIGTERM).

Pipeline parameters are the KFP pipeline's inputs (typed, with their defaults). A step's
``app_handle``/``app_id``/``tracker_run_id`` are task outputs wired into the tasks that use
them (which also orders the tasks), and each step's tracker parent is its parent step's
``tracker_run_id``, as with the local executor and Airflow.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from torchx_kfp._errors import import_kfp

import_kfp()

if TYPE_CHECKING:
    from kfp.dsl.pipeline_task import PipelineTask

    from torchx.workflow import Pipeline

__all__ = ["pipeline_from_workflow"]

_PY_TYPES: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}
_FIELDS = ("app_handle", "app_id", "tracker_run_id")


def _needed(pipeline: Pipeline, name: str, deps: Mapping[str, list[str]]) -> list[str]:
    """The steps whose outputs task ``name`` receives: its dependencies and references."""
    from torchx.workflow._graph import step_refs

    needed = list(deps[name])
    todo = [ref for _, ref in step_refs(pipeline.steps[name])]
    while todo:
        ref = todo.pop()
        if ref.kind != "steps" or ref.name == name and not ref.field.startswith("outputs."):
            continue
        if ref.name != name and ref.name not in needed:
            needed.append(ref.name)
        if ref.field.startswith("outputs."):
            declared = pipeline.steps[ref.name].outputs[ref.field.partition(".")[2]]
            from torchx.workflow._template import find_refs

            todo += [r for r in find_refs(declared) if r.name != ref.name]
    return needed


def _is_static(pipeline: Pipeline, name: str) -> bool:
    from torchx.workflow._graph import step_refs

    return all(ref.kind == "pipeline" for _, ref in step_refs(pipeline.steps[name]))


def _container_task(
    pipeline: Pipeline, name: str, tasks: Mapping[str, PipelineTask], deps: Sequence[str]
) -> Optional[PipelineTask]:
    """A container task for a static, single-task step (None when the step needs a launcher).

    Its tracker parent is the parent step's ``tracker_run_id``; other dependencies order it.
    """
    from torchx.workflow._build import Resolver, build_step
    from torchx.workflow._plan import parent_of
    from torchx_kfp.component import component_from_app

    if not _is_static(pipeline, name):
        return None
    request = build_step(pipeline, name, Resolver(pipeline, pipeline.param_defaults()), {})
    try:
        component = component_from_app(request.app)  # type: ignore[arg-type]
    except ValueError:
        return None
    parent = parent_of(pipeline, name)
    kwargs = {"parent_run_id": tasks[parent].outputs["tracker_run_id"]} if parent else {}
    task = component(**kwargs)
    others = [tasks[d] for d in deps if d != parent]
    if others:
        task.after(*others)
    task.set_display_name(name)
    return task


def _signature(pipeline: Pipeline) -> inspect.Signature:
    params = [
        inspect.Parameter(
            name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=p.default,
            annotation=_PY_TYPES[p.type],
        )
        for name, p in pipeline.params.items()
    ]
    return inspect.Signature(params)


def pipeline_from_workflow(
    pipeline: Pipeline,
    *,
    mode: str = "auto",
    env: Optional[Mapping[str, str]] = None,
    launcher_image: Optional[str] = None,
    packages_to_install: Optional[Sequence[str]] = None,
) -> Callable[..., Any]:
    """Returns a ``@dsl.pipeline`` function with one task per step of ``pipeline``.

    Compile it with ``kfp.compiler.Compiler().compile(fn, "pipeline.yaml")`` or call it under
    ``kfp.local.init(runner=kfp.local.SubprocessRunner(use_venv=False))`` (launcher mode).

    Args:
        pipeline: a validated :class:`torchx.workflow.Pipeline`.
        mode: ``auto`` (container tasks where the KFP adapter's rules allow, else launcher),
            ``launcher`` (every step through a launcher) or ``container`` (fail if a step
            cannot be one container task).
        env: variables for every launcher task and its app (e.g. tracker configuration).
        launcher_image: the launcher tasks' image (default: the KFP adapter's).
        packages_to_install: pip requirements the launcher tasks install at start.

    Raises:
        ValueError: an unknown ``mode``, or a step ``mode="container"`` cannot express.
    """
    from kfp import dsl

    from torchx.workflow._plan import dependencies, order
    from torchx_kfp._workflow_run import pipeline_to_json
    from torchx_kfp.launcher import DEFAULT_LAUNCHER_IMAGE

    if mode not in ("auto", "launcher", "container"):
        raise ValueError(f"unknown mode `{mode}`: use auto, launcher or container")
    data = pipeline_to_json(pipeline)
    deps = dependencies(pipeline)
    component = dsl.component(
        _step_function(),
        base_image=launcher_image or DEFAULT_LAUNCHER_IMAGE,
        packages_to_install=list(packages_to_install or []) or None,
        install_kfp_package=False,
    )

    names = list(pipeline.params)

    def body(*args: Any, **kwargs: Any) -> None:
        values = {**dict(zip(names, args, strict=False)), **kwargs}
        tasks: dict[str, PipelineTask] = {}
        for name in order(pipeline):
            task = (
                _container_task(pipeline, name, tasks, deps[name]) if mode != "launcher" else None
            )
            if task is None and mode == "container":
                raise ValueError(
                    f"step `{name}` cannot be one KFP container task (it references"
                    " parameters or upstream steps, or its app needs a launcher);"
                    " use mode='auto' or 'launcher'"
                )
            if task is None:
                upstream = {
                    f"{up}.{f}": tasks[up].outputs[f]
                    for up in _needed(pipeline, name, deps)
                    for f in _FIELDS
                }
                task = component(
                    pipeline=data,
                    step=name,
                    params=dict(values),
                    upstream=upstream,
                    env=dict(env or {}),
                )
                task.set_display_name(name)
            task.set_caching_options(False)
            tasks[name] = task

    body.__signature__ = _signature(pipeline)  # type: ignore[attr-defined]
    body.__name__ = pipeline.name
    body.__doc__ = pipeline.description or pipeline.name
    return dsl.pipeline(name=pipeline.name.replace("_", "-"), description=pipeline.description)(
        body
    )


def _step_function() -> Callable[..., Any]:
    from torchx_kfp._workflow_step import torchx_workflow_step

    return torchx_workflow_step
