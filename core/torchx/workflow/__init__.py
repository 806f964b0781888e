"""Orchestrator-neutral pipelines of TorchX steps.

One definition (YAML or Python) runs locally (``torchx pipeline run``, :func:`run_pipeline`),
renders to an Airflow DAG (``torchx_airflow.dag_from_pipeline``) and compiles to a KFP
pipeline (``torchx_kfp.pipeline_from_workflow``). Needs ``pip install 'torchx-flow[workflow]'``
(pydantic v2); pydantic is imported only by this package. The rules all three share
(references, run order, tracker parents, rendering) are :mod:`torchx.workflow.plan`.
"""

from __future__ import annotations

from torchx.workflow.errors import Issue, WorkflowError
from torchx.workflow.loader import load_pipeline, pipeline_from_dict, validate_pipeline
from torchx.workflow.model import Param, Pipeline, Step, StepDefaults

__all__ = [
    "Issue",
    "Param",
    "Pipeline",
    "Step",
    "StepDefaults",
    "WorkflowError",
    "load_pipeline",
    "pipeline_from_dict",
    "validate_pipeline",
]
