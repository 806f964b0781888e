"""``pipeline_from_workflow``: a ``torchx.workflow`` pipeline as a KFP v2 pipeline.

Every step is one KFP task, named like the step:

- a step whose app one KFP task can express (one role, one replica, no ports, ...; the KFP
  adapter's rules, :func:`torchx_kfp.component_from_app`) and whose image, resource and cfg
  reference no parameter or step becomes a container task (``mode="auto"`` or
  ``"container"``); its declared outputs named in ``Step.artifacts`` are output artifacts of
  the task (copied from the declared path), which downstream container steps read as input
  artifacts;
- every other step runs through a launcher task (``mode="launcher"`` forces it for all):
  the task renders the step with the run's parameters and the upstream steps' outputs, the
  same way ``torchx pipeline run`` does, and submits it with a TorchX scheduler through the
  KFP adapter's launcher (log streaming, structured errors, cancel on SIGTERM). Pipeline
  channels reach it as inputs of their own, and its ``Step.artifacts`` are output artifacts
  of the task, copied from the declared paths once the app SUCCEEDED
  (:mod:`torchx_kfp._compile.lifted`).

Pipeline parameters are the KFP pipeline's inputs (typed, with their defaults). A step's
``app_handle``/``app_id``/``tracker_run_id`` are task outputs wired into the tasks that use
them (which also orders the tasks), and each step's tracker parent is its parent step's
``tracker_run_id``, as with the local executor and Airflow.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from torchx.workflow.plan import (
    Renderer,
    ValueRenderer,
    build_step,
    dependencies,
    has_refs,
    order,
    parent_of,
    referenced_steps,
)
from torchx_kfp._compile.checks import check_single_task
from torchx_kfp._compile.launcher_pod import mount_claim
from torchx_kfp._compile.lifted import lift_channels, lifted_component
from torchx_kfp._compile.macros import app_id_expr, job_id_expr
from torchx_kfp._compile.placeholders import check_pipeline_spec
from torchx_kfp._errors import import_kfp
from torchx_kfp._in_task.workflow_run import pipeline_to_json
from torchx_kfp._in_task.workflow_step import torchx_workflow_step
from torchx_kfp.component import container_from_app
from torchx_kfp.launcher import DEFAULT_LAUNCHER_IMAGE, exec_into_python

import_kfp()

from google.protobuf import json_format  # type: ignore[import-untyped]  # noqa: E402
from kfp import dsl  # noqa: E402

if TYPE_CHECKING:
    from kfp.dsl.pipeline_task import PipelineTask

    from torchx.workflow import Pipeline
    from torchx.workflow.plan import Ref

__all__ = ["pipeline_from_workflow"]

_PY_TYPES: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}
_FIELDS = ("app_handle", "app_id", "tracker_run_id")


def _needed(pipeline: Pipeline, name: str, deps: Mapping[str, list[str]]) -> list[str]:
    """The steps whose outputs task ``name`` receives: its dependencies and references."""
    return [*deps[name], *(s for s in referenced_steps(pipeline, name) if s not in deps[name])]


def _output(task: PipelineTask, field: str) -> Any:
    """A step field from a task: container tasks have no ``app_handle`` (their run id is it)."""
    if field == "app_handle" and field not in task.outputs:
        field = "tracker_run_id"
    return task.outputs[field]


def _channel_renderer(
    pipeline: Pipeline,
    values: Mapping[str, Any],
    tasks: Mapping[str, PipelineTask],
    artifacts: Optional[Mapping[str, Sequence[str]]] = None,
    own: str = "",
) -> Renderer:
    """The plan's renderer with KFP's callbacks: f-string forms of pipeline channels.

    A parameter is the pipeline input, a step field the task output (a container task runs
    only after its upstream tasks succeeded, so ``state`` is ``SUCCEEDED``). A declared
    output is the upstream task's output artifact when that task produces it as one
    (``artifacts``: ``{step: names}``), else its path, rendered. Step ``own``'s run ids
    (in its own declared outputs) are those its container task computes from its run-id
    inputs.
    """

    def step(ref: Ref) -> str:
        if ref.field.startswith("outputs."):
            out = ref.field.partition(".")[2]
            if out in (artifacts or {}).get(ref.name, ()):
                return str(tasks[ref.name].outputs[out])
            return renderer.render(pipeline.steps[ref.name].outputs[out])
        if ref.field == "state":
            return "SUCCEEDED"
        if ref.name == own:
            return app_id_expr(None) if ref.field == "app_id" else job_id_expr(None)  # type: ignore[arg-type]
        return str(_output(tasks[ref.name], ref.field))

    renderer = Renderer(
        pipeline, param=lambda name: str(values[name]), step=step, expand_outputs=False
    )
    return renderer


def _copied_outputs(
    pipeline: Pipeline,
    name: str,
    values: Mapping[str, Any],
    tasks: Mapping[str, PipelineTask],
    artifacts: Mapping[str, Any],
) -> dict[str, Any]:
    """``outputs=`` of step ``name``'s container task: ``{output: (type, declared path)}``."""
    step = pipeline.steps[name]
    if not step.artifacts:
        return {}

    render = _channel_renderer(pipeline, values, tasks, artifacts, own=name).render
    return {
        out: (getattr(dsl, kind), render(step.outputs[out])) for out, kind in step.artifacts.items()
    }


def _single_task(pipeline: Pipeline, name: str) -> bool:
    """Whether one KFP container task can run the step (the KFP adapter's rules)."""
    step = pipeline.effective(name)
    if any(has_refs(getattr(step, field)) for field in ("resource", "image", "cfg")):
        return False  # a task's resources and image are fixed when the pipeline compiles
    resolve = ValueRenderer(pipeline, pipeline.param_defaults(), placeholder=True)
    try:
        check_single_task(build_step(pipeline, name, resolve, {}).app)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


def _container_task(
    pipeline: Pipeline,
    name: str,
    values: Mapping[str, Any],
    tasks: Mapping[str, PipelineTask],
    deps: Sequence[str],
    artifacts: Mapping[str, Any],
) -> PipelineTask:
    """The step as one KFP container task (``torchx_kfp.container_from_app``).

    Arguments and env may hold parameters and upstream outputs (as pipeline channels); the
    tracker parent is the parent step's ``tracker_run_id``; other dependencies order it.
    The step's ``artifacts`` are output artifacts copied from their declared paths; an
    upstream output artifact in its args is an input artifact (its local path).
    """
    step = pipeline.effective(name)
    render = _channel_renderer(pipeline, values, tasks, artifacts).render
    args = [render(str(a)) for a in step.args] if isinstance(step.args, list) else []
    if isinstance(step.args, Mapping):
        args = [p for k, v in step.args.items() for p in (f"--{k}", render(str(v)))]
    kwargs: dict[str, Any] = {
        "image": step.image,
        "resource": step.resource,
        "max_retries": step.max_retries,
        "env": {k: render(v) for k, v in step.env.items()},
        "display_name": name,
        "outputs": _copied_outputs(pipeline, name, values, tasks, artifacts),
    }
    parent = parent_of(pipeline, name)
    if parent:
        kwargs["parent_run_id"] = tasks[parent].outputs["tracker_run_id"]
    app: Any = step.app if step.app is not None else step.component
    task = container_from_app(app, args if step.component else None, **kwargs)
    referenced = set(_needed(pipeline, name, {name: []}))  # data dependencies already order it
    others = [tasks[d] for d in deps if d != parent and d not in referenced]
    if others:
        task.after(*others)
    return task


def _launcher_task(
    component: Callable[[Mapping[str, Any], Mapping[str, str]], Any],
    pipeline: Pipeline,
    name: str,
    data: str,
    values: Mapping[str, Any],
    tasks: Mapping[str, PipelineTask],
    deps: Mapping[str, list[str]],
    env: Mapping[str, str],
) -> PipelineTask:
    """The step through a launcher task.

    The channels in ``params`` and ``upstream`` become inputs of their own and the step's
    ``artifacts`` output artifacts (:mod:`torchx_kfp._compile.lifted`); the task copies each
    declared output to its artifact once the app SUCCEEDED.
    """
    upstream = {
        f"{up}.{f}": _output(tasks[up], f) for up in _needed(pipeline, name, deps) for f in _FIELDS
    }
    inputs = {"pipeline": data, "step": name, "params": dict(values), "upstream": upstream}
    inputs, channels = lift_channels({**inputs, "env": dict(env)})
    artifacts = dict(pipeline.steps[name].artifacts)
    task = component(channels, artifacts)(**inputs, **channels)
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
    pipeline_dir: Optional[str] = None,
    pvc: Optional[str] = None,
    pvc_mount_path: str = "/mnt/torchx",
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
        pipeline_dir: where ``{{ pipeline.dir }}`` points inside the tasks (e.g. the directory
            an image holds the examples in); default: the pipeline file's directory here.
        pvc: a PersistentVolumeClaim (ReadWriteMany) mounted at ``pvc_mount_path`` in every
            task (and, with the kubernetes scheduler, in every pod of a launcher step's app):
            point the parameter the step outputs live under (``workdir``) there, so the
            steps share data on a cluster (see :func:`torchx_kfp.launcher_from_app`).
        pvc_mount_path: where ``pvc`` is mounted.

    Raises:
        ValueError: an unknown ``mode``, or a step ``mode="container"`` cannot express.
    """
    if mode not in ("auto", "launcher", "container"):
        raise ValueError(f"unknown mode `{mode}`: use auto, launcher or container")
    if pipeline_dir is not None:
        name = os.path.basename(pipeline.source) or "pipeline.yaml"
        pipeline = pipeline.model_copy(update={"source": os.path.join(pipeline_dir, name)})
    data = pipeline_to_json(pipeline)
    deps = dependencies(pipeline)
    options = {
        "base_image": launcher_image or DEFAULT_LAUNCHER_IMAGE,
        "packages_to_install": list(packages_to_install or []) or None,
        "install_kfp_package": False,
    }
    volume = {"pvc": pvc or "", "pvc_mount_path": pvc_mount_path if pvc else ""}
    step_task = _step_components(options, volume)  # launcher steps mount the claim in the app

    names = list(pipeline.params)

    def body(*args: Any, **kwargs: Any) -> None:
        values = {**dict(zip(names, args, strict=False)), **kwargs}
        tasks: dict[str, PipelineTask] = {}
        artifacts: dict[str, list[str]] = {}  # {step: its output artifacts}
        for name in order(pipeline):
            single = mode != "launcher" and _single_task(pipeline, name)
            if mode == "container" and not single:
                raise ValueError(
                    f"step `{name}` cannot be one KFP container task (its app needs several"
                    " tasks, or its resource or image references a parameter or a step);"
                    " use mode='auto' or 'launcher'"
                )
            if single:
                task = _container_task(pipeline, name, values, tasks, deps[name], artifacts)
            else:
                task = _launcher_task(
                    step_task, pipeline, name, data, values, tasks, deps, env or {}
                )
            artifacts[name] = list(pipeline.steps[name].artifacts)
            task.set_caching_options(False)
            if pvc:
                mount_claim(task, pvc, pvc_mount_path)
            tasks[name] = task

    body.__signature__ = _signature(pipeline)  # type: ignore[attr-defined]
    body.__name__ = pipeline.name
    body.__doc__ = pipeline.description or pipeline.name
    graph = dsl.pipeline(name=pipeline.name.replace("_", "-"), description=pipeline.description)(
        body
    )
    _check_backend_rules(graph)
    return graph


def _step_components(
    options: Mapping[str, Any], volume: Mapping[str, Any]
) -> Callable[[Mapping[str, Any], Mapping[str, str]], Any]:
    """``(channels, artifacts) -> component`` (with the volume inputs bound) for launcher steps.

    The plain step component (built once) when a step has neither lifted channels nor output
    artifacts, else one generated for them (:func:`torchx_kfp._compile.lifted.lifted_component`).
    Every component's shell ``exec``s Python, so SIGTERM reaches the launcher.
    """
    plain: list[Any] = []

    def component(channels: Mapping[str, Any], artifacts: Mapping[str, str]) -> Any:
        if channels or artifacts:
            made = lifted_component(
                _step_function(), "workflow_step", channels, artifacts, **options
            )
            return functools.partial(made, **volume)
        if not plain:
            plain.append(exec_into_python(dsl.component(_step_function(), **options)))
        return functools.partial(plain[0], **volume)

    return component


def _check_backend_rules(graph: Any) -> None:
    """Refuses a pipeline holding a placeholder the KFP backend would leave literal."""
    check_pipeline_spec(json_format.MessageToDict(graph.pipeline_spec))


def _step_function() -> Callable[..., Any]:

    return torchx_workflow_step
