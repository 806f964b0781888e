"""``dag_from_pipeline``: a ``torchx.workflow`` pipeline as an Airflow DAG of TorchXOperators.

Each step becomes one :class:`~torchx_airflow.TorchXOperator` (task id = step name) with the
step's component, arguments, scheduler, run options, image, named resource, env and retries.
Pipeline parameters become DAG params (``{{ params.NAME }}`` is already Jinja), a reference
to an upstream step becomes an XCom pull of that task's ``return_value`` (``app_id``,
``app_handle``, ``tracker_run_id``, ``state``), a declared output is expanded in place, and
each task's ``parent_run_id`` is its parent step's ``tracker_run_id``, so tracker lineage is
the same as with ``torchx pipeline run``.

Parsing builds no AppDef and imports neither the runner nor the schedulers' backends. A
pipeline file's plan is cached between parses (``_parse_cache``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Optional, Union

from airflow.sdk import DAG, Param

from torchx_airflow import _parse_cache
from torchx_airflow._lineage_pipeline import step_lineage
from torchx_airflow.operators.torchx import TorchXOperator

if TYPE_CHECKING:
    from airflow.sdk import DAG

    from torchx.workflow import Pipeline
    from torchx.workflow.plan import Renderer

__all__ = ["dag_from_pipeline", "to_jinja"]


def _xcom(step: str, field: str) -> str:
    return f"{{{{ ti.xcom_pull(task_ids='{step}')['{field}'] }}}}"


def _renderer(pipeline: Pipeline, param_jinja: Optional[Mapping[str, str]] = None) -> Renderer:
    """The plan's renderer with Airflow's callbacks: DAG params and XCom pulls."""
    from torchx.workflow.plan import Renderer  # lazy: ~7-18 ms; cache hit: none

    jinja = dict(param_jinja or {})
    return Renderer(
        pipeline,
        param=lambda name: jinja.get(name) or f"{{{{ params.{name} }}}}",
        step=lambda ref: _xcom(ref.name, ref.field),
    )


def to_jinja(pipeline: Pipeline, text: str) -> str:
    """Rewrites the ``{{ ... }}`` references of a pipeline string as Airflow Jinja.

    Args:
        pipeline: the pipeline (for ``pipeline.dir`` and declared outputs).
        text: a string of the pipeline.
    """
    return _renderer(pipeline).render(text)


def _param_specs(pipeline: Pipeline) -> dict[str, Any]:
    """``{name: {default, description, schema}}`` of the pipeline's params (plain data)."""
    specs = {}
    for name, p in pipeline.params.items():
        schema: dict[str, Any] = {"type": p.type}
        if p.minimum is not None:
            schema["minimum"] = p.minimum
        if p.maximum is not None:
            schema["maximum"] = p.maximum
        if p.enum is not None:
            schema["enum"] = p.enum
        specs[name] = {"default": p.default, "description": p.description or None, "schema": schema}
    return specs


def _step_kwargs(
    pipeline: Pipeline, name: str, param_jinja: Optional[Mapping[str, str]]
) -> dict[str, Any]:
    """The ``TorchXOperator`` arguments that come from the pipeline step."""
    from torchx.workflow.plan import parent_of  # lazy: ~7-18 ms; cache hit: none

    step = pipeline.effective(name)
    jinja = _renderer(pipeline, param_jinja).render_value
    kwargs: dict[str, Any] = {
        "task_id": name,
        "scheduler": jinja(step.scheduler),
        "scheduler_cfg": jinja(step.cfg) or None,
        "image": jinja(step.image),
        "resource": jinja(step.resource),
        "env": jinja(step.env),
        "max_retries": step.max_retries,
        "role_retry_policy": step.retry_policy,
    }
    if step.component is not None:
        kwargs["component"] = step.component
        kwargs["component_args"] = jinja(step.args)
    else:
        kwargs["app"] = step.app
    parent = parent_of(pipeline, name)
    if parent:
        kwargs["parent_run_id"] = _xcom(parent, "tracker_run_id")
    # OpenLineage: the step's declared outputs, and the other steps' outputs it reads
    kwargs.update({k: v for k, v in step_lineage(pipeline, name, param_jinja).items() if v})
    return kwargs


def _plan(pipeline: Pipeline, param_jinja: Optional[Mapping[str, str]]) -> dict[str, Any]:
    """What the DAG is made of: name, description, params, operator arguments, edges.

    Plain data for a pipeline loaded from YAML, so that the parse cache can keep it as JSON.
    """
    from torchx.workflow.plan import dependencies, order  # lazy: ~7-18 ms, cache hit: none

    return {
        "name": pipeline.name,
        "description": pipeline.description or None,
        "params": _param_specs(pipeline),
        "tasks": {n: _step_kwargs(pipeline, n, param_jinja) for n in order(pipeline)},
        "edges": dependencies(pipeline),
    }


def _is_plan(plan: Any) -> bool:
    """Whether a cached ``plan`` has the shape :func:`_plan` gives."""
    try:
        tasks, edges = plan["tasks"], plan["edges"]
        return (
            isinstance(plan["name"], str)
            and all(isinstance(p["schema"], dict) for p in plan["params"].values())
            and all(isinstance(kw, dict) and kw.get("task_id") == n for n, kw in tasks.items())
            and all(n in tasks and set(ups) <= set(tasks) for n, ups in edges.items())
        )
    except (KeyError, TypeError, AttributeError):
        return False


def _with_task_kwargs(
    kwargs: dict[str, Any], name: str, task_kwargs: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    for extra in (task_kwargs.get("*", {}), task_kwargs.get(name, {})):
        env = {**(kwargs.get("env") or {}), **(extra.get("env") or {})}
        kwargs.update(extra)
        kwargs["env"] = env
    return kwargs


def _load_plan(
    pipeline: Union[Pipeline, str, os.PathLike[str]], param_jinja: Optional[Mapping[str, str]]
) -> dict[str, Any]:
    """The plan of ``pipeline``; a file's from the parse cache when it is still valid."""
    if not isinstance(pipeline, (str, os.PathLike)):
        from torchx.workflow import Pipeline as _Pipeline  # lazy: ~7-18 ms; cache hit: none
        from torchx.workflow import load_pipeline  # lazy: ~7-18 ms; cache hit: none

        if not isinstance(pipeline, _Pipeline):
            pipeline = load_pipeline(pipeline)  # the same error as before for a bad argument
        return _plan(pipeline, param_jinja)

    source = os.fspath(pipeline)
    cached = _parse_cache.load_plan(source, param_jinja)
    if _is_plan(cached):
        return cached
    before = list(sys.modules)
    from torchx.workflow import load_pipeline  # lazy: ~7-18 ms; cache hit: none

    loaded = load_pipeline(source)
    plan = _plan(loaded, param_jinja)
    files = [
        os.path.abspath(s.component.rpartition(":")[0])
        for s in loaded.steps.values()
        if s.component and s.component.rpartition(":")[0].endswith(".py")
    ]
    _parse_cache.store_plan(source, param_jinja, plan, before, files)
    return plan


def dag_from_pipeline(
    pipeline: Union[Pipeline, str, os.PathLike[str]],
    *,
    dag_id: Union[str, None] = None,
    param_jinja: Optional[Mapping[str, str]] = None,
    task_kwargs: Optional[Mapping[str, Mapping[str, Any]]] = None,
    **dag_kwargs: Any,
) -> DAG:
    """Returns an Airflow DAG with one TorchXOperator per pipeline step.

    Example (a per-run work dir, and Airflow retries and a timeout on ``train``)::

        dag_from_pipeline(
            "pipelines/pipeline.yaml",
            param_jinja={"workdir": "{{ params.workdir }}/{{ run_id }}"},
            task_kwargs={"train": {"retries": 2, "execution_timeout": timedelta(hours=1)}},
        )

    A pipeline file's DAG plan (params, operator arguments, edges) is cached between parses
    (:mod:`torchx_airflow._parse_cache`): a parse that finds the file, the installed
    components and plugins, the ``.torchxconfig`` files and torchx itself unchanged loads
    neither the pipeline nor the component registry.

    Args:
        pipeline: a :class:`torchx.workflow.Pipeline`, or the path of a pipeline YAML file.
        dag_id: the DAG id (default: the pipeline name).
        param_jinja: ``{param: Jinja text}`` used where the pipeline says ``{{ params.NAME }}``
            (default ``{{ params.NAME }}``): Airflow-only values such as a per-run directory.
        task_kwargs: more ``TorchXOperator`` arguments per step name, ``"*"`` for every step
            (``retries``, ``execution_timeout``, ``on_finish_action``, ...); an ``env`` is
            merged into the step's env.
        **dag_kwargs: more ``DAG`` arguments (``schedule`` defaults to None, ``start_date``
            to 2025-01-01, ``catchup`` to False, ``doc_md`` to the pipeline description).

    Raises:
        torchx.workflow.WorkflowError: the pipeline file is invalid.
    """
    plan = _load_plan(pipeline, param_jinja)
    dag_kwargs.setdefault("schedule", None)
    dag_kwargs.setdefault("start_date", datetime(2025, 1, 1))
    dag_kwargs.setdefault("catchup", False)
    dag_kwargs.setdefault("doc_md", plan["description"])
    params = {
        name: Param(p["default"], description=p["description"], **p["schema"])
        for name, p in plan["params"].items()
    }
    params.update(dag_kwargs.pop("params", {}))
    with DAG(dag_id=dag_id or plan["name"], params=params, **dag_kwargs) as dag:
        tasks = {
            n: TorchXOperator(**_with_task_kwargs(kwargs, n, task_kwargs or {}))
            for n, kwargs in plan["tasks"].items()
        }
        for name, ups in plan["edges"].items():
            for up in ups:
                tasks[up] >> tasks[name]
    return dag
