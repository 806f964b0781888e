"""Example DAG: prepare data -> train with DDP (1 node x 2 workers) -> evaluate, with TorchX.

A thin wrapper of the shared pipeline definition ``examples/pipeline.yaml`` (the same file
``torchx pipeline run`` runs locally and ``torchx_kfp.pipeline_from_workflow`` compiles for
KFP): each step is one ``TorchXOperator`` running a TorchX component:

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

from torchx_airflow import dag_from_pipeline

# [START torchx_training_dag]
EXAMPLES = os.environ.get(
    "TORCHX_FLOW_EXAMPLES", os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples")
)

dag = dag_from_pipeline(
    os.path.join(EXAMPLES, "pipeline.yaml"), dag_id="torchx_training", tags=["torchx", "example"]
)
# [END torchx_training_dag]
