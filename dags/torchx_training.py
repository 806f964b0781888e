"""Example DAG: prepare data -> train with DDP (1 node x 2 workers) -> evaluate, with TorchX.

Each step is one ``TorchXOperator`` running a TorchX component:

- ``prepare_data``: ``utils.python`` runs ``examples/pipeline/prepare.py``;
- ``train``: ``dist.ddp -j 1x2`` runs ``examples/train.py`` on the named resource
  ``params.trainer_resource``; its tracker parent is the prepare step's run;
- ``evaluate``: ``utils.python`` runs ``examples/pipeline/evaluate.py`` on the checkpoint the
  train step saved (``<workdir>/out/<train app id>/model.pt``, the app id read from the train
  task's XCom).

The scheduler is the DAG param ``scheduler`` (``local_cwd`` here), so the same DAG targets
another TorchX scheduler by triggering it with ``{"scheduler": "kubernetes"}`` (plus an image
that holds the examples). Run it locally with ``scripts/airflow-dags-test.sh``.

Nothing heavy happens at parse time: the operators only store the component names and
arguments; AppDefs are built when the tasks run.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime

from airflow.sdk import DAG, Param

from torchx_airflow import TorchXOperator

# [START torchx_training_dag]
EXAMPLES = os.environ.get(
    "TORCHX_FLOW_EXAMPLES", os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples")
)
WORKDIR = os.path.join(tempfile.gettempdir(), "torchx_training")
SCHEDULER = "{{ params.scheduler }}"

with DAG(
    dag_id="torchx_training",
    schedule=None,
    start_date=datetime(2025, 1, 1),
    catchup=False,
    tags=["torchx", "example"],
    doc_md=__doc__,
    params={
        "scheduler": Param("local_cwd", type="string", description="TorchX scheduler"),
        "workdir": Param(WORKDIR, type="string", description="data and checkpoints"),
        "steps": Param(50, type="integer", minimum=1, description="training steps"),
        "trainer_resource": Param("cpu.small", type="string", description="named resource"),
    },
) as dag:
    prepare = TorchXOperator(
        task_id="prepare_data",
        component="utils.python",
        component_args=[
            "--script",
            f"{EXAMPLES}/pipeline/prepare.py",
            "--",
            "--output-dir",
            "{{ params.workdir }}/data",
        ],
        scheduler=SCHEDULER,
    )
    train = TorchXOperator(
        task_id="train",
        component="dist.ddp",
        component_args=[
            "-j",
            "1x2",
            "--script",
            f"{EXAMPLES}/train.py",
            "--",
            "--steps",
            "{{ params.steps }}",
            "--output-dir",
            "{{ params.workdir }}/out",
        ],
        resource="{{ params.trainer_resource }}",
        scheduler=SCHEDULER,
        parent_run_id="{{ ti.xcom_pull(task_ids='prepare_data')['tracker_run_id'] }}",
    )
    evaluate = TorchXOperator(
        task_id="evaluate",
        component="utils.python",
        component_args=[
            "--script",
            f"{EXAMPLES}/pipeline/evaluate.py",
            "--",
            "--checkpoint",
            # the app's own id (TORCHX_JOB_ID, which train.py names its output after) is the
            # scheduler's app id without a `namespace:` prefix (kubernetes)
            "{{ params.workdir }}/out/"
            "{{ ti.xcom_pull(task_ids='train')['app_id'].split(':')[-1] }}/model.pt",
            "--data",
            "{{ params.workdir }}/data/dataset.json",
        ],
        scheduler=SCHEDULER,
        parent_run_id="{{ ti.xcom_pull(task_ids='train')['tracker_run_id'] }}",
    )
    prepare >> train >> evaluate
# [END torchx_training_dag]
