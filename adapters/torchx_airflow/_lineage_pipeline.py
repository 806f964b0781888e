"""OpenLineage inputs and outputs of a ``torchx.workflow`` pipeline step, as operator arguments.

A step's ``lineage_outputs`` are its declared ``outputs``; its ``lineage_inputs`` the declared
outputs of other steps that its strings (args, env, run options, image, resource) reference
(``{{ steps.prepare_data.outputs.dataset }}``). Both are Airflow Jinja, rendered like the
step's other arguments: ``{{ params.NAME }}`` (or the ``param_jinja`` text), an upstream
step's result as an XCom pull of its task, and the step's own ``app_id`` as TorchX's
``${app_id}``, which the lineage replaces by the app's id once the app is known::

    from torchx.workflow import load_pipeline

    pipeline = load_pipeline("pipelines/pipeline.yaml")
    dag = dag_from_pipeline(
        pipeline, task_kwargs={name: step_lineage(pipeline, name) for name in pipeline.steps}
    )
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from torchx.workflow import Pipeline
    from torchx.workflow.plan import Ref

__all__ = ["step_lineage"]

_APP_ID_MACRO = "${app_id}"


def _used_outputs(pipeline: Pipeline, name: str) -> list[tuple[str, str]]:
    """``(step, output name)`` of the other steps' declared outputs step ``name`` uses."""
    from torchx.workflow.plan import Renderer  # lazy: ~7-18 ms; cache hit: none

    used: list[tuple[str, str]] = []

    def record(ref: Ref) -> str:
        kind, _, output = ref.field.partition(".")
        if kind == "outputs" and ref.name != name and (ref.name, output) not in used:
            used.append((ref.name, output))
        return ""

    step = pipeline.effective(name)
    recorder = Renderer(pipeline, param=lambda _: "", step=record, expand_outputs=False)
    recorder.render_value([step.args, step.env, step.cfg, step.image, step.resource])
    return used


def step_lineage(
    pipeline: Pipeline, name: str, param_jinja: Optional[Mapping[str, str]] = None
) -> dict[str, list[str]]:
    """``{"lineage_inputs": [...], "lineage_outputs": [...]}`` of step ``name``.

    Args:
        pipeline: the pipeline.
        name: the step.
        param_jinja: ``{param: Jinja text}`` as given to ``dag_from_pipeline``.
    """
    from torchx.workflow.plan import Renderer  # lazy: ~7-18 ms; cache hit: none

    jinja = dict(param_jinja or {})

    def step_text(ref: Ref) -> str:
        if ref.name == name and ref.field == "app_id":
            return _APP_ID_MACRO
        return f"{{{{ ti.xcom_pull(task_ids='{ref.name}')['{ref.field}'] }}}}"

    renderer = Renderer(
        pipeline, param=lambda p: jinja.get(p) or f"{{{{ params.{p} }}}}", step=step_text
    )
    inputs = [
        renderer.render(pipeline.steps[up].outputs[output])
        for up, output in _used_outputs(pipeline, name)
    ]
    outputs = [renderer.render(text) for text in pipeline.steps[name].outputs.values()]
    return {"lineage_inputs": inputs, "lineage_outputs": outputs}
