"""What a pipeline step's launcher task does at run time (see :mod:`torchx_kfp._workflow`).

It rebuilds the pipeline from JSON, renders the step with the run's parameters and the
upstream steps' outputs (the same rendering ``torchx pipeline run`` does), builds the
AppDef through ``torchx.runner.launch`` and submits it with the KFP adapter's launcher
(:func:`torchx_kfp._in_task.launch.launch`: log streaming, cancel on SIGTERM, structured errors).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional

from torchx.workflow import Pipeline
from torchx.workflow.plan import ValueRenderer, build_step
from torchx_kfp._appjson import app_from_json, app_to_json

# pipeline_to_json runs at compile time (torchx_kfp._workflow): what only a task needs stays lazy
__all__ = ["pipeline_from_json", "pipeline_to_json", "run_step", "step_output_paths"]

_APP_KEY = "__torchx_appdef__"


def pipeline_to_json(pipeline: Pipeline) -> str:
    """Serializes a pipeline (AppDef steps through ``app_to_json``).

    Steps' ``artifacts`` are left out: a launcher task reads declared outputs as paths.
    """
    data = pipeline.model_dump(mode="python", exclude={"steps": {"__all__": {"artifacts"}}})
    for name, step in pipeline.steps.items():
        if step.app is not None:
            data["steps"][name]["app"] = {_APP_KEY: app_to_json(step.app)}
    return json.dumps(data, default=str, sort_keys=True)


def pipeline_from_json(text: str) -> Pipeline:
    """Rebuilds the pipeline :func:`pipeline_to_json` serialized."""
    data = json.loads(text)
    for step in data["steps"].values():
        if isinstance(step.get("app"), dict) and _APP_KEY in step["app"]:
            step["app"] = app_from_json(step["app"][_APP_KEY])
    return Pipeline.model_validate(data)


def _results(pipeline: Pipeline, upstream: Mapping[str, str], params: Any) -> dict[str, Any]:
    results: dict[str, dict[str, str]] = {}
    for key, value in upstream.items():
        name, _, field = key.partition(".")
        results.setdefault(name, {"state": "SUCCEEDED"})[field] = str(value)
    for name, values in results.items():
        outs = ValueRenderer(pipeline, params, results).outputs_of(name)
        values.update({f"outputs.{k}": v for k, v in outs.items()})
    return results


def _cfg_text(cfg: Mapping[str, Any]) -> str:
    for key, value in cfg.items():
        if "," in str(value) or "=" in str(value):
            raise ValueError(f"run option `{key}={value}` cannot be passed to a KFP launcher")
    return ",".join(f"{k}={v}" for k, v in cfg.items())


def run_step(
    pipeline_json: str,
    step: str,
    params: Mapping[str, Any],
    upstream: Mapping[str, str],
    env: Mapping[str, str],
    volume: Optional[tuple[str, str]] = None,
) -> str:
    """Launches ``step`` and waits for it; returns its app handle when it SUCCEEDED.

    ``volume`` (a claim and its mount path in the task's pod) is mounted in the app's pods
    too when the step's scheduler is ``kubernetes``.

    Raises:
        TorchXKfpAppError: the app did not succeed.
    """
    from torchx.runner import get_runner  # lazy: the runner API, ~5 ms, run time only
    from torchx.workflow.executor import resolve_params  # lazy: ~6 ms, run time only
    from torchx_kfp._in_task.launch import launch  # lazy: runner.follow ~4 ms, run time only

    pipeline = pipeline_from_json(pipeline_json)
    values = resolve_params(pipeline, params)
    resolve = ValueRenderer(pipeline, values, _results(pipeline, upstream, values))
    with get_runner() as runner:
        defaults = runner.config.component_defaults()
    request = build_step(pipeline, step, resolve, defaults)
    if request.app is None:  # build_step always builds the AppDef
        raise ValueError(f"step `{step}` built no AppDef")
    spec = {"app": app_to_json(request.app)}
    cfg = _cfg_text(request.cfg) if isinstance(request.cfg, Mapping) else str(request.cfg or "")
    scheduler = str(request.scheduler)
    parent = request.parent_run_id or ""
    return launch(spec, {}, env, scheduler, cfg, parent, volume=volume)


def step_output_paths(
    pipeline_json: str,
    step: str,
    params: Mapping[str, Any],
    upstream: Mapping[str, str],
    handle: str,
) -> dict[str, str]:
    """Step ``step``'s declared outputs, rendered once its app (``handle``) SUCCEEDED."""
    from torchx.workflow.executor import resolve_params  # lazy: ~6 ms, run time only

    pipeline = pipeline_from_json(pipeline_json)
    values = resolve_params(pipeline, params)
    results = _results(pipeline, upstream, values)
    own = {"app_handle": handle, "app_id": handle.rsplit("/", 1)[-1], "tracker_run_id": handle}
    results[step] = {"state": "SUCCEEDED", **own}
    return ValueRenderer(pipeline, values, results).outputs_of(step)
