"""Dynamic task mapping, DAG serialization and the extra link (issue 25 items 5 and 6).

Airflow's own serializer (``DagSerialization`` / ``SerializedDAG``: what the DAG processor
stores and the scheduler and API server read) round-trips every operator configuration the
README and ``dags/`` show, mapped ones included; a mapped sweep runs for real in dag.test()
(local_cwd apps), and the connection's ``ui_url`` fills the "TorchX app" link through
Airflow's link machinery (the link XCom the worker stores, ``get_extra_links``).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _airflow_support import airflow_home_env, dag_argv, write_dag

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("airflow") is None,
        reason="apache-airflow is not installed (pip install -e '.[airflow]')",
    ),
    pytest.mark.slow,
]

REPO = Path(__file__).resolve().parents[3]

# every TorchXOperator configuration docs/airflow.md and dags/ show, and the
# mapped sweeps of issue 25 (component_args, params, scheduler_cfg, env)
CONFIGS = """
import os
from datetime import datetime, timedelta
from airflow.sdk import DAG
from torchx_airflow import TorchXOperator

with DAG("configs", schedule=None, start_date=datetime(2024, 1, 1)) as dag:
    TorchXOperator(
        task_id="readme",
        component="dist.ddp",
        component_args=["-j", "1x2", "--script", "examples/train.py", "--", "--steps", "50"],
        scheduler="{{ params.scheduler }}",
        resource="cpu.small",
        parent_run_id="{{ ti.xcom_pull(task_ids='prepare_data')['tracker_run_id'] }}",
        deferrable=False,
    )
    TorchXOperator(
        task_id="every_kwarg",
        component="utils.sh",
        component_args={"args": ["echo", "hi"]},
        scheduler="kubernetes",
        scheduler_cfg={"namespace": "ml", "queue": "default"},
        image={"sh": "busybox"},
        resource={"sh": "cpu.small"},
        max_retries=1,
        role_retry_policy="REPLICA",
        env={"A": "1"},
        env_allow=["WANDB_*"],
        torchx_conn_id="torchx_k8s",
        deferrable=True,
        poll_interval=2.0,
        stream_logs=False,
        durable=False,
        on_finish_action="keep",
        on_other_host="launch",
        startup_timeout=60.0,
        retries=2,
        execution_timeout=timedelta(hours=1),
    )
    TorchXOperator.partial(task_id="sweep_args", component="utils.echo").expand(
        component_args=[["--msg", "lr=0.1"], ["--msg", "lr=0.01"], ["--msg", "lr=0.001"]]
    )
    TorchXOperator.partial(task_id="sweep_params", component="utils.echo").expand(
        params=[{"lr": 0.1}, {"lr": 0.01}]
    )
    TorchXOperator.partial(task_id="sweep_cfg", component="utils.echo").expand(
        scheduler_cfg=[{"log_dir": "/tmp/a"}, {"log_dir": "/tmp/b"}]
    )
    TorchXOperator.partial(task_id="sweep_env", component="utils.echo").expand(
        env=[{"LR": "0.1"}, {"LR": "0.01"}]
    )
"""

ROUND_TRIP = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
from airflow.serialization.serialized_objects import DagSerialization

bag = DagBag(dag_folder=sys.argv[1])
out = {"errors": {k: str(v) for k, v in bag.import_errors.items()}, "dags": {}}
for dag_id, dag in bag.dags.items():
    data = DagSerialization.to_dict(dag)
    json.dumps(data)  # what the DAG processor stores
    back = DagSerialization.from_dict(data)
    tasks = {}
    for task in back.tasks:
        tasks[task.task_id] = {
            "type": type(task).__name__,
            "links": sorted(getattr(task, "extra_links", []) or []),
            "expand": sorted(getattr(task, "expand_input", None).value)
            if getattr(task, "expand_input", None) is not None else [],
        }
    out["dags"][dag_id] = tasks
print(json.dumps(out))
"""


API_LINKS = """
import json
from sqlalchemy import select
from airflow.models.serialized_dag import SerializedDagModel
from airflow.models.taskinstance import TaskInstance
from airflow.utils.session import create_session

# what the API server's extra-links endpoint does for each task instance
with create_session() as session:
    dag = SerializedDagModel.get_dag("sweep", session=session)
    task = dag.get_task("train")
    out = {}
    for ti in session.scalars(select(TaskInstance).where(TaskInstance.task_id == "train")):
        out[ti.map_index] = {name: task.get_extra_links(ti, name) for name in task.extra_links}
print(json.dumps(out))
"""


def round_trip(env: dict[str, str], folder: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", ROUND_TRIP, str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_documented_configuration_survives_airflow_serialization(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    env = airflow_home_env(tmp_path, tmp_path_factory)
    folder = tmp_path / "configs"
    folder.mkdir()
    (folder / "configs.py").write_text(CONFIGS)
    for dag in (REPO / "dags").glob("*.py"):  # the example DAGs, as a deployment copies them
        (folder / dag.name).write_text(dag.read_text())
    shutil.copy(REPO / "dags" / ".airflowignore", folder)  # the Celery stack's DAGs stay out
    for name in ("examples", "pipelines"):  # found next to the DAG file
        shutil.copytree(REPO / name, folder / name, ignore=shutil.ignore_patterns("__py*"))
    env.pop("TORCHX_FLOW_PIPELINES", None)
    found = round_trip(env, folder)
    assert found["errors"] == {}
    tasks = found["dags"]["configs"]
    assert set(tasks) == {
        "readme",
        "every_kwarg",
        "sweep_args",
        "sweep_params",
        "sweep_cfg",
        "sweep_env",
    }
    for task_id in ("sweep_args", "sweep_params", "sweep_cfg", "sweep_env"):
        assert tasks[task_id]["links"] == ["TorchX app"], tasks[task_id]
    assert tasks["sweep_cfg"]["expand"] == ["scheduler_cfg"]
    assert tasks["readme"]["links"] == ["TorchX app"]
    assert "torchx_training" in found["dags"]


def test_a_mapped_sweep_runs_one_app_per_map_index_and_fills_the_ui_url_link(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    extra = {"ui_url": "https://dash.example/{scheduler}/{session}/{app_id}?ns={namespace}"}
    conn = json.dumps({"conn_type": "torchx", "extra": extra})
    env = airflow_home_env(tmp_path, tmp_path_factory, AIRFLOW_CONN_TORCHX_DEFAULT=conn)
    dag_file = write_dag(
        env,
        """
        import json

        from airflow.sdk import task

        with DAG("sweep", schedule=None, start_date=datetime(2024, 1, 1)):
            runs = TorchXOperator.partial(
                task_id="train", component="utils.sh", retries=1
            ).expand(
                component_args=[["echo", "lr=0.1"], ["echo", "lr=0.01"], ["echo", "lr=0.001"]],
            )

            @task
            def links(**context):
                ti = context["ti"]
                handles = ti.xcom_pull(task_ids="train", key="return_value")
                print("HANDLES:", json.dumps([h["app_handle"] for h in handles]))
                for i in range(3):
                    link = ti.xcom_pull(task_ids="train", key="_link_TorchXAppLink", map_indexes=i)
                    print("LINK:", i, link)

            runs >> links()
        """,
    )
    out = subprocess.run(
        dag_argv(dag_file, "sweep"), env=env, capture_output=True, text=True, timeout=600
    )
    output = out.stdout + out.stderr
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert summary["state"] == "success", output[-3000:]
    (handles,) = [
        json.loads(x.split(":", 1)[1]) for x in output.splitlines() if x.startswith("HANDLES:")
    ]
    assert len(set(handles)) == 3  # one app per map index
    links = sorted(x for x in output.splitlines() if x.startswith("LINK:"))
    assert len(links) == 3, output[-3000:]
    for i, line in enumerate(links):
        app_id = handles[i].rpartition("/")[2]
        assert line == f"LINK: {i} https://dash.example/local_cwd/torchx/{app_id}?ns=", line
    for i in range(3):
        assert f"lr=0.{'0' * i}1" in output
    api = subprocess.run(
        [sys.executable, "-c", API_LINKS], env=env, capture_output=True, text=True, timeout=300
    )
    assert api.returncode == 0, api.stderr[-3000:]
    served = json.loads(api.stdout.strip().splitlines()[-1])
    for i in range(3):
        app_id = handles[i].rpartition("/")[2]
        url = f"https://dash.example/local_cwd/torchx/{app_id}?ns="
        assert served[str(i)] == {"TorchX app": url}
