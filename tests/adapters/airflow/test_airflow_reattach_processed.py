"""An app is used by one finishing try only, even when the task state store is empty.

The try that sees an app end marks it processed on the app itself (label
``airflow-processed``: Kubernetes Job labels, a marker volume next to Docker containers), so a
later try's label search skips it without the store: the store's rows are deleted before every
later try here (Airflow < 3.3 has no store; ``[state_store] clear_on_success = True`` empties it
on success, set here too). Real Airflow (``python -m torchx_airflow.local``: dag.test() on
SQLite and the next try of a task of that run, as after a retry or a clear) and real apps on
the local Docker engine and the local Kubernetes cluster (plain mode; volcano mode, which has
no controller here, through the operator's re-attach step against the real API server).
"""

from __future__ import annotations

import importlib.util
import json
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _airflow_support import (
    airflow_home_env,
    dag_argv,
    kill_9_when,
    run_logged,
    running_apps,
    state_store,
    write_dag,
)
from _support import gate_command, gate_mount, run_opening_gate

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("airflow") is None,
        reason="apache-airflow is not installed (pip install -e '.[airflow]')",
    ),
    pytest.mark.slow,
]

# the app runs until the test opens its gate (a marker file in a mounted folder)
DAG_BODY = """
with DAG("{dag_id}", schedule=None, start_date=datetime(2024, 1, 1)):
    TorchXOperator(
        task_id="job",
        component="utils.sh",
        component_args=["--image", "{image}", "--mounts", "{mount}", "sh", "-c", "{command}"],
        scheduler="{scheduler}",
        retries=2,
    )
"""


@pytest.fixture
def airflow_env(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return airflow_home_env(
        tmp_path, tmp_path_factory, AIRFLOW__STATE_STORE__CLEAR_ON_SUCCESS="True"
    )


@pytest.fixture
def runner() -> Iterator[Any]:
    from torchx.runner import get_runner

    with get_runner() as r:
        yield r


def write_job_dag(env: dict[str, str], gate: Path, **fields: Any) -> Path:
    """The DAG of task ``job``, whose app waits for ``gate`` to open."""
    command = gate_command(str(gate), "echo job done")
    return write_dag(env, DAG_BODY.format(mount=gate_mount(gate), command=command, **fields))


def argv(dag_file: Path, dag_id: str, next_try: bool = False) -> list[str]:
    """A dag.test() run, or the next try of task `job` of the existing run (a retry, a clear)."""
    return dag_argv(dag_file, dag_id, "job" if next_try else "")


def run_next_try(
    env: dict[str, str], cmd: list[str], log: Path, gate: Path | None = None
) -> tuple[dict[str, Any], str]:
    """Empties the task state store (as if there were none), runs ``cmd``: task `job` succeeds.

    With ``gate``, the gate opens once the try re-attached (the app ends while it follows).
    """
    with state_store(env) as db:
        db.execute("DELETE FROM task_state_store")
    if gate is None:
        summary, output = run_logged(env, cmd, log)
    else:
        code, output = run_opening_gate(cmd, env, log, "-> reattach", gate)
        assert code == 0, output[-3000:]
        summary = json.loads(output.strip().splitlines()[-1])
    assert summary["tasks"]["job"]["state"] == "success", output[-3000:]
    return summary["tasks"]["job"], output


def check_one_finishing_try(
    env: dict[str, str],
    dag_file: Path,
    dag_id: str,
    apps: Callable[[], list[Any]],
    tmp: Path,
    gate: Path,
) -> None:
    """kill -9 -> the retry re-attaches by labels; a clear (store empty) runs a second app.

    The first app runs until the retry re-attached to it (``gate``); the second at once.
    """
    # killed once the app runs (running_apps says why not sooner)
    kill_9_when(argv(dag_file, dag_id), env, tmp / "first.log", lambda: running_apps(apps()))
    (app,) = apps()
    assert app.state.name == "RUNNING"

    task, output = run_next_try(env, argv(dag_file, dag_id, True), tmp / "retry.log", gate)
    assert "by its labels" in output and "-> reattach" in output
    assert task["xcom"]["return_value"]["app_handle"] == app.app_handle
    (seen,) = apps()  # 0 duplicates, and the try that saw it end marked it
    assert seen.labels["airflow-processed"] == "true"

    task, output = run_next_try(env, argv(dag_file, dag_id, True), tmp / "clear.log")
    assert "-> reuse" not in output and "by its labels" not in output
    handles = {a.app_handle for a in apps()}
    second = task["xcom"]["return_value"]["app_handle"]
    assert handles == {app.app_handle, second} and second != app.app_handle
    assert all(a.labels["airflow-processed"] == "true" for a in apps())


@pytest.mark.docker
def test_docker_clear_after_success_runs_a_second_app_without_the_store(
    airflow_env: dict[str, str], runner: Any, tmp_path: Path
) -> None:
    from torchx.runner.labels import find_apps

    dag_id = f"processed_docker_{uuid.uuid4().hex[:6]}"
    env = {**airflow_env, "DOCKER_HOST": os.environ["DOCKER_HOST"]}
    fields = {"image": "torchx-flow/busybox:latest", "scheduler": "local_docker"}
    gate = tmp_path / "gate"
    dag_file = write_job_dag(env, gate, dag_id=dag_id, **fields)

    def apps() -> list[Any]:
        return find_apps(runner, "local_docker", {"airflow-dag-id": dag_id})

    try:
        check_one_finishing_try(env, dag_file, dag_id, apps, tmp_path, gate)
    finally:
        for found in apps():
            runner.delete(found.app_handle)


@pytest.mark.k8s
def test_kubernetes_clear_after_success_runs_a_second_app_without_the_store(
    airflow_env: dict[str, str], runner: Any, tmp_path: Path
) -> None:
    from _k8s_live import api_client, namespace

    from torchx.runner.labels import find_apps

    dag_id = "processed_k8s"
    with namespace(api_client()) as ns:
        cfg = {"namespace": ns, "mode": "plain"}
        extra = {"kubeconfig": Path(os.environ["KUBECONFIG"]).read_text(), "scheduler_cfg": cfg}
        connection = json.dumps({"conn_type": "torchx", "extra": extra})
        env = {**airflow_env, "AIRFLOW_CONN_TORCHX_DEFAULT": connection}
        fields = {"image": "torchx-flow/python:3.11", "scheduler": "kubernetes"}
        gate = tmp_path / "gate"
        dag_file = write_job_dag(env, gate, dag_id=dag_id, **fields)

        def apps() -> list[Any]:
            return find_apps(runner, "kubernetes", {"airflow-dag-id": dag_id}, cfg)

        check_one_finishing_try(env, dag_file, dag_id, apps, tmp_path, gate)


# ------------------------------------------------------------------ volcano mode


class _Ti:
    dag_id, task_id, run_id, map_index, try_number = "vc_dag", "train", "manual__x", -1, 2


@pytest.mark.k8s  # the Volcano Job CRD: installed by k8s-current.sh
def test_volcano_apps_are_re_attached_by_labels_and_skipped_once_processed(runner: Any) -> None:
    """The operator's re-attach step (no store) on Volcano Jobs of the real API server.

    No Volcano controller runs here: the test writes the Job's status as it would.
    """
    import logging

    from kubernetes import client

    from torchx.runner.launch import LaunchRequest
    from torchx_airflow._attach import find_earlier, mark_processed
    from torchx_airflow._reattach import AppSlot, task_labels
    from torchx_airflow._settings import TorchXSettings

    ti = _Ti()
    ti.run_id = f"manual__{uuid.uuid4().hex[:8]}"
    labels = task_labels({"ti": ti})
    cfg = {"namespace": "default", "mode": "volcano", "queue": "default"}
    settings = TorchXSettings(scheduler="kubernetes", scheduler_cfg=cfg)
    log = logging.getLogger("test")
    request = LaunchRequest(
        component="utils.sh",
        component_args=["--image", "torchx-flow/busybox:latest", "true"],
        scheduler="kubernetes",
        cfg=cfg,
        labels=labels,
    )
    handle = runner.launch(request)
    try:
        slot = AppSlot(None, log)  # no task state store
        found, status = find_earlier(runner, settings, "kubernetes", slot, labels, "fail", log)
        assert found == handle and status is not None and not status.is_terminal()  # re-attach

        name = handle.rpartition(":")[2]
        custom = client.CustomObjectsApi(runner._scheduler("kubernetes")._api_client())
        gvp = {"group": "batch.volcano.sh", "version": "v1alpha1", "plural": "jobs"}
        job = custom.get_namespaced_custom_object(namespace="default", name=name, **gvp)
        job["status"] = {"state": {"phase": "Completed"}}
        custom.replace_namespaced_custom_object_status(
            namespace="default", name=name, body=job, **gvp
        )
        found, status = find_earlier(runner, settings, "kubernetes", slot, labels, "fail", log)
        assert found == handle and status is not None and status.state.name == "SUCCEEDED"

        mark_processed(runner, slot, handle, log)  # the try that saw it end
        found, status = find_earlier(runner, settings, "kubernetes", slot, labels, "fail", log)
        assert (found, status) == (None, None)  # a cleared task launches anew
    finally:
        runner.delete(handle)
