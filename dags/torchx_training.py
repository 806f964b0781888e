"""Example DAG: prepare data -> train with DDP (1 node x 2 workers) -> evaluate, with TorchX.

A thin wrapper of the shared pipeline definition ``examples/pipeline.yaml`` (the same file
``torchx pipeline run`` runs locally and ``torchx_kfp.pipeline_from_workflow`` compiles for
KFP): each step is one ``TorchXOperator`` running a TorchX component:

- ``prepare_data``: ``utils.python`` runs ``examples/pipeline/prepare.py``;
- ``train``: ``dist.ddp -j 1x2`` runs ``examples/train.py`` on the named resource
  ``params.trainer_resource``; its tracker parent is the prepare step's run;
- ``evaluate``: ``utils.python`` runs ``examples/pipeline/evaluate.py`` on the checkpoint the
  train step saved (``<run dir>/out/<train app id>/model.pt``, the app id read from the train
  task's XCom).

What Airflow adds to the pipeline (copy it):

- a work dir per DAG run: ``<params.workdir>/<run id>`` (data, checkpoints), so runs and
  reruns never share files;
- a tracker: every step records to the ``fsspec`` tracker in ``<params.workdir>/tracker``
  (``torchx tracker list jobs`` / ``lineage`` read it), with the tracker parents of the pipeline;
- on ``train``: Airflow ``retries`` (a retry re-attaches to the app of a worker that died, or
  runs it again) and an ``execution_timeout`` (also the deadline of a deferred wait; the app
  is cancelled when it passes).

The scheduler is the DAG param ``scheduler`` (``local_cwd`` here), so the same DAG targets
another TorchX scheduler by triggering it with ``{"scheduler": "kubernetes"}`` (plus an image
that holds the examples and a ``workdir`` the pods share: see the README, Airflow section).
Run it locally with ``scripts/airflow-dags-test.sh``.

Nothing heavy happens at parse time: the operators only store the component names and
arguments; AppDefs are built when the tasks run.
"""

from __future__ import annotations

import os
from datetime import timedelta

from torchx_airflow import dag_from_pipeline

# [START torchx_training_dag]
EXAMPLES = os.environ.get(
    "TORCHX_FLOW_EXAMPLES", os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples")
)
# a run id such as manual__2025-01-01T00:00:00+00:00, as a path component
RUN_DIR = "{{ params.workdir }}/{{ run_id | replace(':', '-') | replace('+', '-') }}"
TRACKER = {
    "TORCHX_TRACKERS": "fsspec",
    "TORCHX_TRACKER_FSSPEC_CONFIG": "{{ params.workdir }}/tracker",
}

dag = dag_from_pipeline(
    os.path.join(EXAMPLES, "pipeline.yaml"),
    dag_id="torchx_training",
    tags=["torchx", "example"],
    param_jinja={"workdir": RUN_DIR},
    task_kwargs={
        "*": {"env": TRACKER},
        "train": {
            "retries": 2,
            "retry_delay": timedelta(seconds=30),
            "execution_timeout": timedelta(hours=2),
        },
    },
)
# [END torchx_training_dag]
