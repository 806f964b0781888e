"""Example KFP pipeline: ``examples/pipeline.yaml`` (prepare -> train DDP 1x2 -> evaluate).

A thin wrapper of the shared pipeline definition, which ``torchx pipeline run`` also runs
locally and ``dags/torchx_training.py`` turns into an Airflow DAG:
``torchx_kfp.pipeline_from_workflow`` makes ``prepare_data`` and ``evaluate`` container tasks
and ``train`` (``dist.ddp``, which one KFP task cannot express) a launcher task. Inside the
tasks the examples are expected at ``/opt/torchx-flow/examples``.
"""

from pathlib import Path

from torchx.workflow import load_pipeline
from torchx_kfp import pipeline_from_workflow

# [START torchx_training_workflow_pipeline]
PIPELINE = Path(__file__).resolve().parents[1] / "examples" / "pipeline.yaml"

torchx_training_workflow = pipeline_from_workflow(
    load_pipeline(PIPELINE), pipeline_dir="/opt/torchx-flow/examples"
)
# [END torchx_training_workflow_pipeline]
