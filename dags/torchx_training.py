"""Example DAG: prepare data -> train with DDP (1 node x 2 workers) -> evaluate, with TorchX.

A thin wrapper of the shared pipeline definition ``pipelines/pipeline.yaml`` (the same file
``torchx pipeline run`` runs locally and ``torchx_kfp.pipeline_from_workflow`` compiles for
KFP): each step is one ``TorchXOperator`` running a TorchX component:

- ``prepare_data``: ``utils.python`` runs ``examples/pipeline/prepare.py``;
- ``train``: ``dist.ddp -j 1x2`` runs ``examples/train.py`` on the named resource
  ``params.trainer_resource``; its tracker parent is the prepare step's run;
- ``evaluate``: ``utils.python`` runs ``examples/pipeline/evaluate.py`` on the checkpoint the
  train step saved (``<run dir>/out/<train app id>/model.pt``, the app id read from the train
  task's XCom).

Copy it into a deployment unchanged. It finds ``pipeline.yaml`` in, in order:
``$TORCHX_FLOW_PIPELINES``, a ``pipelines/`` folder next to this file, this repository's
``pipelines/``; the pipeline's scripts are in the ``examples/`` folder beside that
``pipelines/`` folder (``{{ pipeline.dir }}/../examples``). Without any of them the DAG does not
import, and its import error says where it looked. The scripts run where the replicas run: on
a cluster, the image of each component must hold ``pipelines/`` and ``examples/`` at those
same paths (``[component:*] image`` in the connection's ``torchxconfig``; see docs/airflow.md).

Defaults, chosen to work on a distributed deployment (Celery or Kubernetes executor, apps on a
cluster):

- ``scheduler`` (DAG param, default ``""``): the ``torchx_default`` connection's scheduler
  (``local_cwd`` without a connection); trigger with ``{"scheduler": ...}`` to override;
- ``workdir`` (DAG param): ``$TORCHX_TRAINING_WORKDIR``, else ``/tmp/torchx_training``. Every
  step reads what the one before wrote there, so on more than one worker or on a cluster it
  must be storage all replicas share at the same path (a volume mounted by the components'
  ``mounts``); a work dir per DAG run, ``<workdir>/<run id>``, keeps runs and reruns apart;
- every step has Airflow ``retries`` (a retry re-attaches to the app of a worker that died, or
  runs it again) and an ``execution_timeout`` (also the deadline of a deferred wait; the app
  is cancelled when it passes): 30 minutes for ``prepare_data`` and ``evaluate``, 2 hours for
  ``train``;
- a tracker: every step records to the ``fsspec`` tracker in ``<workdir>/tracker``
  (``torchx tracker list jobs`` / ``lineage`` read it), with the tracker parents of the
  pipeline.

Run it locally with ``scripts/airflow-dags-test.sh``. Nothing heavy happens at parse time: the
operators only store the component names and arguments; AppDefs are built when the tasks run.
"""

from __future__ import annotations

import os
from datetime import timedelta

from airflow.sdk import Param

from torchx_airflow import dag_from_pipeline

# [START torchx_training_dag]
HERE = os.path.dirname(os.path.abspath(__file__))
PLACES = [
    os.environ.get("TORCHX_FLOW_PIPELINES", ""),
    os.path.join(HERE, "pipelines"),
    os.path.join(os.path.dirname(HERE), "pipelines"),
]
PIPELINE = next(
    (
        os.path.join(p, "pipeline.yaml")
        for p in PLACES
        if p and os.path.isfile(f"{p}/pipeline.yaml")
    ),
    None,
)
if PIPELINE is None:
    raise FileNotFoundError(
        "torchx_training: pipeline.yaml not found in $TORCHX_FLOW_PIPELINES, "
        f"{PLACES[1]} or {PLACES[2]}: copy the pipelines/ and examples/ folders next to this"
        " DAG file"
    )
# a run id such as manual__2025-01-01T00:00:00+00:00, as a path component
RUN_DIR = "{{ params.workdir }}/{{ run_id | replace(':', '-') | replace('+', '-') }}"
TRACKER = {
    "TORCHX_TRACKERS": "fsspec",
    "TORCHX_TRACKER_FSSPEC_CONFIG": "{{ params.workdir }}/tracker",
}
SHORT = {
    "retries": 2,
    "retry_delay": timedelta(seconds=30),
    "execution_timeout": timedelta(minutes=30),
}

dag = dag_from_pipeline(
    PIPELINE,
    dag_id="torchx_training",
    tags=["torchx", "example"],
    params={
        "scheduler": Param(
            "", type="string", description="TorchX scheduler ('': the connection's)"
        ),
        "workdir": Param(
            os.environ.get("TORCHX_TRAINING_WORKDIR", "/tmp/torchx_training"),
            type="string",
            description="data and checkpoints: storage every replica shares",
        ),
    },
    param_jinja={"workdir": RUN_DIR},
    task_kwargs={
        "*": {"env": TRACKER, **SHORT},
        "train": {"execution_timeout": timedelta(hours=2)},
    },
)
# [END torchx_training_dag]
