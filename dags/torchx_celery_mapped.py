"""A mapped hyper-parameter sweep for the Celery stack's tests (test_dags_celery_faults.py).

``torchx_sweep``: ``TorchXOperator.partial(...).expand(component_args=...)``, three 2-replica
DDP apps (``dist.ddp -j 2x1``: one pod per replica) of the example trainer on the connection's
cluster, one per learning rate. A file of its own: a DAG that fails to serialize is an import
error of its file only, so the other fault DAGs still load.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import DAG

from torchx_airflow import TorchXOperator

EXAMPLES = os.environ.get("TORCHX_FLOW_EXAMPLES", "/opt/torchx-flow/examples")
LEARNING_RATES = ("0.01", "0.05", "0.1")

with DAG(
    "torchx_sweep",
    schedule=None,
    start_date=datetime(2025, 1, 1),
    default_args={"retry_delay": timedelta(seconds=2)},
    tags=["faults"],
):
    TorchXOperator.partial(
        task_id="sweep",
        component="dist.ddp",
        scheduler="kubernetes",
        resource="cpu.small",
        env={"OMP_NUM_THREADS": "1"},
        poll_interval=2.0,
        execution_timeout=timedelta(minutes=10),
    ).expand(
        component_args=[
            ["-j", "2x1", "--script", f"{EXAMPLES}/train.py", "--", "--steps", "10"]
            + ["--lr", lr, "--output-dir", f"/tmp/sweep-{lr}"]
            for lr in LEARNING_RATES
        ]
    )
