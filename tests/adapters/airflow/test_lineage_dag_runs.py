"""OpenLineage events of TorchXOperator tasks in real ``dag.test()`` runs (file transport).

The OpenLineage provider's listener runs as in production, in its ``execute_in_thread`` mode
(the README's setting; see the fixture); the events land in a JSON-lines file through the OpenLineage
client's file transport. Apps are real local_cwd apps; a replica writes its own environment's
OpenLineage variables to a file, to check that a trainer's events can link back to the task.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _airflow_support import airflow_home_env, dag_argv
from _airflow_support import write_dag as write_dag_file

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("airflow.providers.openlineage") is None,
        reason="the OpenLineage provider is not installed (pip install -e '.[airflow]')",
    ),
    pytest.mark.slow,
]

WRITE_ENV = (
    "import json, os, sys; json.dump({k: v for k, v in os.environ.items()"
    " if k.startswith('OPENLINEAGE')}, open(sys.argv[1], 'w'))"
)


@pytest.fixture
def ol_env(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    transport = {"type": "file", "log_file_path": str(tmp_path / "events.jsonl"), "append": True}
    return airflow_home_env(
        tmp_path,
        tmp_path_factory,
        AIRFLOW__OPENLINEAGE__TRANSPORT=json.dumps(transport),
        AIRFLOW__OPENLINEAGE__NAMESPACE="torchx-tests",
        # the mode the README asks for: the lineage reads XComs and the connection, which a
        # forked listener process cannot do under dag.test (in-process API)
        AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD="True",
    )


@pytest.fixture
def write_dag(ol_env: dict[str, str]) -> Callable[[str], Path]:
    return functools.partial(write_dag_file, ol_env)


def run_dag(env: dict[str, str], dag_file: Path, dag_id: str) -> tuple[dict[str, Any], str]:
    proc = subprocess.run(
        dag_argv(dag_file, dag_id), env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the summary is the last JSON line; the listener's processes and threads may log after it,
    # even onto the end of its line (their writes interleave): only the leading object counts
    last = [line for line in proc.stdout.splitlines() if line.startswith("{")][-1]
    summary, _ = json.JSONDecoder().raw_decode(last)
    return summary, proc.stdout + proc.stderr


def task_events(tmp_path: Path, job: str) -> dict[str, dict[str, Any]]:
    """The last event of each type (START, COMPLETE, FAIL) of OpenLineage job ``job``."""
    path = tmp_path / "events.jsonl"
    assert path.exists(), "no OpenLineage event was written"
    found: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if event.get("job", {}).get("name") == job:
            found[event["eventType"]] = event
    return found


def datasets(event: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    return [(d["namespace"], d["name"]) for d in event.get(kind, [])]


def test_events_carry_datasets_and_torchx_facets_and_replicas_get_the_parent(
    write_dag, ol_env, tmp_path: Path
) -> None:
    seen_env = tmp_path / "replica-env.json"
    out = tmp_path / "out"
    dag_file = write_dag(
        f"""
        with DAG("ol", schedule=None, start_date=datetime(2024, 1, 1)):
            TorchXOperator(
                task_id="train",
                component="utils.python",
                component_args=["-c", {WRITE_ENV!r}, {str(seen_env)!r}],
                env={{"OTHER": "kept"}},
                lineage_inputs=["s3://datasets/mnist/train"],
                lineage_outputs=[{str(out)!r} + "/{{{{ dag.dag_id }}}}/${{app_id}}/model.pt"],
            )
            TorchXOperator(
                task_id="bad",
                component="utils.python",
                component_args=["-c", "raise SystemExit('no GPU left')"],
                lineage_outputs=["gs://ckpt/bad"],
            )
        """
    )
    summary, output = run_dag(ol_env, dag_file, "ol")
    assert summary["tasks"]["train"]["state"] == "success", output[-3000:]
    assert summary["tasks"]["bad"]["state"] == "failed", output[-3000:]

    train = summary["tasks"]["train"]["xcom"]["return_value"]
    events = task_events(tmp_path, "ol.train")
    assert {"START", "COMPLETE"} <= set(events), output[-3000:]
    start, complete = events["START"], events["COMPLETE"]
    assert datasets(start, "inputs") == [("s3://datasets", "mnist/train")]
    assert datasets(complete, "inputs") == [("s3://datasets", "mnist/train")]
    assert datasets(complete, "outputs") == [("file", f"{out}/ol/{train['app_id']}/model.pt")]
    facet = complete["run"]["facets"]["torchx"]
    assert facet["scheduler"] == "local_cwd"
    assert facet["component"] == "utils.python"
    assert (facet["appHandle"], facet["appId"], facet["state"]) == (
        train["app_handle"],
        train["app_id"],
        "SUCCEEDED",
    )
    [role] = facet["roles"]
    assert role["name"] == "python" and role["replicas"] == 1
    assert set(role["resources"]) >= {"cpu", "gpu", "memMB"} and role["image"]
    assert "appHandle" not in start["run"]["facets"]["torchx"]  # not launched yet (None: left out)
    assert "torchx_error" not in complete["run"]["facets"]

    # the replica saw the task's OpenLineage run as its parent (and the DAG run as root)
    replica = json.loads(seen_env.read_text())
    run_id = complete["run"]["runId"]
    assert replica["OPENLINEAGE_PARENT_ID"] == f"torchx-tests/ol.train/{run_id}"
    parent = complete["run"]["facets"]["parent"]
    root = parent["root"]["run"]["runId"] if "root" in parent else parent["run"]["runId"]
    assert replica["OPENLINEAGE_ROOT_PARENT_ID"] == f"torchx-tests/ol/{root}"

    bad = task_events(tmp_path, "ol.bad")
    assert {"START", "FAIL"} <= set(bad), output[-3000:]
    fail = bad["FAIL"]
    assert datasets(fail, "outputs") == [("gs://ckpt", "bad")]
    error = fail["run"]["facets"]["torchx_error"]
    bad_xcom = summary["tasks"]["bad"]["xcom"]
    assert error["appHandle"] == bad_xcom["app_handle"] and error["state"] == "FAILED"
    assert error["message"].startswith(f"TorchX app {bad_xcom['app_handle']} ended FAILED")
    assert fail["run"]["facets"]["torchx"]["state"] == "FAILED"
    assert "errorMessage" in fail["run"]["facets"]  # the provider's own, from the exception


def test_deferred_task_completes_with_the_app_and_its_replica_gets_the_parent(
    write_dag, ol_env, tmp_path: Path
) -> None:
    seen_env = tmp_path / "replica-env.json"
    dag_file = write_dag(
        f"""
        with DAG("old", schedule=None, start_date=datetime(2024, 1, 1)):
            TorchXOperator(
                task_id="train",
                component="utils.python",
                component_args=["-c", {WRITE_ENV!r}, {str(seen_env)!r}],
                deferrable=True,
                poll_interval=1,
                lineage_outputs=["s3://ckpt/${{app_id}}"],
            )
        """
    )
    env = {**ol_env, "AIRFLOW__TORCHX__DEFER_LOCAL_APPS": "true"}
    summary, output = run_dag(env, dag_file, "old")
    assert summary["state"] == "success", output[-3000:]
    assert "running trigger in line" in output  # it really deferred
    train = summary["tasks"]["train"]["xcom"]["return_value"]
    complete = task_events(tmp_path, "old.train")["COMPLETE"]
    assert datasets(complete, "outputs") == [("s3://ckpt", train["app_id"])]
    assert complete["run"]["facets"]["torchx"]["appHandle"] == train["app_handle"]
    assert json.loads(seen_env.read_text())["OPENLINEAGE_PARENT_ID"].endswith(
        f"/old.train/{complete['run']['runId']}"
    )


def test_without_a_transport_replicas_get_no_parent(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    env = airflow_home_env(tmp_path, tmp_path_factory)
    env = {
        k: v for k, v in env.items() if not k.startswith(("OPENLINEAGE", "AIRFLOW__OPENLINEAGE"))
    }
    seen_env = tmp_path / "replica-env.json"
    dag_file = write_dag_file(
        env,
        f"""
        with DAG("nool", schedule=None, start_date=datetime(2024, 1, 1)):
            TorchXOperator(
                task_id="train",
                component="utils.python",
                component_args=["-c", {WRITE_ENV!r}, {str(seen_env)!r}],
                lineage_outputs=["s3://ckpt/x"],
            )
        """,
    )
    summary, output = run_dag(env, dag_file, "nool")
    assert summary["state"] == "success", output[-3000:]
    assert json.loads(seen_env.read_text()) == {}


PIPELINE = """
name: olpipe
params:
  workdir: {default: WORKDIR}
steps:
  make:
    component: utils.python
    args: ["-c", "import sys; open(sys.argv[1], 'w').write('rows')", "{{ params.workdir }}/data.txt"]
    outputs:
      data: "{{ params.workdir }}/data.txt"
      ckpt: "{{ params.workdir }}/ckpt/{{ steps.make.app_id }}"
  use:
    component: utils.python
    args:
      - -c
      - "import sys; print(open(sys.argv[1]).read(), sys.argv[2])"
      - "{{ steps.make.outputs.data }}"
      - "{{ steps.make.outputs.ckpt }}"
    outputs:
      report: "s3://reports/{{ steps.make.app_id }}/{{ steps.use.app_id }}.json"
"""


def test_pipeline_steps_declared_outputs_are_the_lineage(write_dag, ol_env, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    pipeline = tmp_path / "olpipe.yaml"
    pipeline.write_text(PIPELINE.replace("WORKDIR", str(workdir)))
    dag_file = write_dag(
        f"""
        from torchx.workflow import load_pipeline
        from torchx_airflow import dag_from_pipeline
        from torchx_airflow._lineage_pipeline import step_lineage

        pipeline = load_pipeline({str(pipeline)!r})
        dag = dag_from_pipeline(
            pipeline, task_kwargs={{n: step_lineage(pipeline, n) for n in pipeline.steps}}
        )
        """
    )
    summary, output = run_dag(ol_env, dag_file, "olpipe")
    assert summary["state"] == "success", output[-3000:]
    make = summary["tasks"]["make"]["xcom"]["return_value"]["app_id"]
    use = summary["tasks"]["use"]["xcom"]["return_value"]["app_id"]
    made = task_events(tmp_path, "olpipe.make")["COMPLETE"]
    assert datasets(made, "outputs") == [
        ("file", f"{workdir}/data.txt"),
        ("file", f"{workdir}/ckpt/{make}"),
    ]
    used = task_events(tmp_path, "olpipe.use")["COMPLETE"]
    assert datasets(used, "inputs") == [
        ("file", f"{workdir}/data.txt"),
        ("file", f"{workdir}/ckpt/{make}"),
    ]
    assert datasets(used, "outputs") == [("s3://reports", f"{make}/{use}.json")]
