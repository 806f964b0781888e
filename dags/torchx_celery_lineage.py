"""The DAG of the Celery stack's OpenLineage test (tests/dags/test_dags_celery_lineage.py).

``torchx_lineage``, on the stack's ``torchx`` connection (apps are pods of its cluster), no
retries:

- ``train``: ``utils.python`` writes the ``OPENLINEAGE*`` variables of its replica's
  environment as JSON to ``{{ dag_run.conf['out'] }}`` (the work directory every pod mounts),
  with declared lineage inputs and outputs (the output holds the app's id);
- ``bad``: ``utils.python`` that exits with an error, with a declared output.

The workers' OpenLineage provider writes the events through its file transport (set by the
test, per worker).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG

from torchx_airflow import TorchXOperator

WRITE_ENV = (
    "import json, os, sys; json.dump({k: v for k, v in os.environ.items()"
    " if k.startswith('OPENLINEAGE')}, open(sys.argv[1], 'w'))"
)

with DAG(
    "torchx_lineage",
    schedule=None,
    start_date=datetime(2025, 1, 1),
    default_args={"retries": 0, "execution_timeout": timedelta(minutes=10)},
    tags=["lineage"],
):
    TorchXOperator(
        task_id="train",
        component="utils.python",
        component_args=["-c", WRITE_ENV, "{{ dag_run.conf['out'] }}"],
        scheduler="kubernetes",
        poll_interval=2.0,
        lineage_inputs=["s3://datasets/mnist/train"],
        lineage_outputs=["s3://ckpt/{{ dag.dag_id }}/${app_id}/model.pt"],
    )
    TorchXOperator(
        task_id="bad",
        component="utils.python",
        component_args=["-c", "raise SystemExit('no GPU left')"],
        scheduler="kubernetes",
        poll_interval=2.0,
        lineage_outputs=["s3://ckpt/bad"],
    )
