"""Example KFP pipeline: ``pipelines/pipeline.yaml`` (prepare -> train DDP 1x2 -> evaluate).

A thin wrapper of the shared pipeline definition, which ``torchx pipeline run`` also runs
locally and ``dags/torchx_training.py`` turns into an Airflow DAG:
``torchx_kfp.pipeline_from_workflow`` makes ``prepare_data`` and ``evaluate`` container tasks
and ``train`` (``dist.ddp``, which one KFP task cannot express) a launcher task. For KFP every
step runs ``IMAGE`` (it holds ``pipelines/`` and ``examples/`` under ``/opt/torchx-flow``, where
``{{ pipeline.dir }}/../examples`` finds the scripts), and the steps'
outputs (paths under ``workdir``) live on the PersistentVolumeClaim ``torchx-training-data``
(``deploy/torchx-training-pvc.yaml``), mounted at ``/mnt/torchx`` in every task and, with
``scheduler=kubernetes``, in the train step's pods: ``workdir`` defaults to it here.
The declared outputs are KFP artifacts too (the steps' ``artifacts``, ``ARTIFACTS``):
``prepare_data``'s ``dataset`` a ``Dataset`` and ``evaluate``'s ``metrics`` (``{mse,
checkpoint}``) ``Metrics``, each copied by its container task from the declared path, and
``train``'s ``checkpoint`` a ``Model``, copied by the launcher task once the app SUCCEEDED
(the app writes it on the claim, which the launcher task mounts too). The KFP UI lists the
three; ``evaluate`` reads the dataset and the checkpoint as input artifacts.
"""

from pathlib import Path

from torchx.workflow import Pipeline, load_pipeline
from torchx_kfp import pipeline_from_workflow

IMAGE = "torchx-flow/torch:2.13.0"
"""torch + torchx-flow + examples/ and pipelines/ (scripts/infra/torch-image.sh builds it)."""
DATA = "/mnt/torchx"
"""Where the shared claim is mounted (the KFP default of ``workdir``)."""
PVC = "torchx-training-data"
ARTIFACTS = {
    "prepare_data": {"dataset": "Dataset"},
    "train": {"checkpoint": "Model"},
    "evaluate": {"metrics": "Metrics"},
}
"""The steps' declared outputs that are KFP artifacts, with their kinds."""


def for_kfp(pipeline: Pipeline) -> Pipeline:
    """The pipeline for KFP: images, ``workdir`` on the claim, ``ARTIFACTS`` declared."""
    params = dict(pipeline.params)
    params["workdir"] = params["workdir"].model_copy(update={"default": DATA})
    defaults = pipeline.defaults.model_copy(update={"image": IMAGE})
    steps = dict(pipeline.steps)
    for name, artifacts in ARTIFACTS.items():
        steps[name] = steps[name].model_copy(update={"artifacts": artifacts})
    return pipeline.model_copy(update={"params": params, "defaults": defaults, "steps": steps})


# [START torchx_training_workflow_pipeline]
PIPELINE = Path(__file__).resolve().parent / "pipeline.yaml"

torchx_training_workflow = pipeline_from_workflow(
    for_kfp(load_pipeline(PIPELINE)),
    pipeline_dir="/opt/torchx-flow/pipelines",
    launcher_image=IMAGE,
    pvc=PVC,
    pvc_mount_path=DATA,
)
# [END torchx_training_workflow_pipeline]
