"""TorchXOperator on a distributed deployment: re-attach, clear, deadlines, cleanup, secrets.

Real Airflow (``python -m torchx_airflow.local``: dag.test() on SQLite, and the next try of a
task of an existing run, as the scheduler starts it after a retry or a clear) and real apps
(local_cwd; local_docker on the local engine). The task state store is Airflow's table in the
run's SQLite database: deleting its rows after a kill -9 is a worker killed before it wrote
the handle; rewriting the stored host is a retry landing on another worker.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
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

BUSYBOX = "torchx-flow/busybox:latest"


@pytest.fixture
def airflow_env(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return airflow_home_env(tmp_path, tmp_path_factory)


@pytest.fixture
def runner() -> Iterator[Any]:
    from torchx.runner import get_runner

    with get_runner() as r:
        yield r


# ------------------------------------------------------------------ re-attach by labels


# the app runs until the test opens its gate (a marker file in a mounted folder)
DOCKER_DAG = """
with DAG("{dag_id}", schedule=None, start_date=datetime(2024, 1, 1)):
    TorchXOperator(
        task_id="job",
        component="utils.sh",
        component_args=["--image", "{image}", "--mounts", "{mount}", "sh", "-c", "{command}"],
        scheduler="local_docker",
        retries=2,
    )
"""


def docker_apps(runner: Any, dag_id: str) -> list[Any]:
    from torchx.runner.labels import find_apps

    return find_apps(runner, "local_docker", {"airflow-dag-id": dag_id})


@pytest.mark.docker
@pytest.mark.parametrize("store_written", [False, True], ids=["before-store-write", "after"])
def test_kill_9_at_any_point_leaves_exactly_one_docker_app_and_clear_runs_a_second(
    airflow_env: dict[str, str], runner: Any, store_written: bool, tmp_path: Path
) -> None:
    dag_id = f"crash_docker_{'after' if store_written else 'before'}"
    env = {**airflow_env, "DOCKER_HOST": os.environ["DOCKER_HOST"]}
    gate = tmp_path / "gate"
    fields = {"mount": gate_mount(gate), "command": gate_command(str(gate), "echo job done")}
    dag_file = write_dag(env, DOCKER_DAG.format(dag_id=dag_id, image=BUSYBOX, **fields))
    first = tmp_path / "first.log"
    try:
        if store_written:  # killed once the handle is in the task state store
            ready = lambda: "kept the app handle for re-attach" in first.read_text()  # noqa: E731
        else:  # killed as soon as its container runs (running_apps says why not sooner)
            ready = lambda: running_apps(docker_apps(runner, dag_id))  # noqa: E731
        kill_9_when(dag_argv(dag_file, dag_id), env, first, ready)
        (app,) = docker_apps(runner, dag_id)
        assert app.state.name in ("SUBMITTED", "PENDING", "RUNNING")
        if not store_written:
            with state_store(env) as db:  # as if the worker died before writing the handle
                db.execute("DELETE FROM task_state_store")

        # the retry decides while the app runs; the app ends once it follows it
        retry = dag_argv(dag_file, dag_id, "job")
        code, output = run_opening_gate(retry, env, tmp_path / "retry.log", "-> reattach", gate)
        assert code == 0, output[-3000:]
        task = json.loads(output.strip().splitlines()[-1])["tasks"]["job"]
        assert task["state"] == "success", output[-3000:]
        assert task["xcom"]["return_value"]["app_handle"] == app.app_handle
        assert "-> reattach" in output and "[sh/0] job done" in output
        assert ("by its labels" in output) != store_written
        assert len(docker_apps(runner, dag_id)) == 1  # 0 duplicates

        # clearing the succeeded task runs a second app; the first is never reused
        summary, output = run_logged(env, dag_argv(dag_file, dag_id, "job"), tmp_path / "clear.log")
        assert summary["tasks"]["job"]["state"] == "success", output[-3000:]
        handles = {a.app_handle for a in docker_apps(runner, dag_id)}
        assert len(handles) == 2 and app.app_handle in handles
        assert summary["tasks"]["job"]["xcom"]["return_value"]["app_handle"] != app.app_handle
    finally:
        for found in docker_apps(runner, dag_id):
            runner.delete(found.app_handle)


# ------------------------------------------------------------------ local apps on another host

LOCAL_DAG = """
with DAG("{dag_id}", schedule=None, start_date=datetime(2024, 1, 1)):
    TorchXOperator(
        task_id="job",
        component="utils.sh",
        component_args=["sh", "-c", "sleep 2; echo job done"],
        retries=2,
        on_other_host="{on_other_host}",
    )
"""


@pytest.mark.parametrize("on_other_host", ["fail", "launch"])
def test_a_retry_on_another_host_never_silently_duplicates_a_local_app(
    airflow_env: dict[str, str], runner: Any, on_other_host: str, tmp_path: Path
) -> None:
    dag_id = f"elsewhere_{on_other_host}"
    dag_file = write_dag(airflow_env, LOCAL_DAG.format(dag_id=dag_id, on_other_host=on_other_host))
    first = tmp_path / "first.log"
    ready = lambda: "kept the app handle for re-attach" in first.read_text()  # noqa: E731
    kill_9_when(dag_argv(dag_file, dag_id), airflow_env, first, ready)
    (old,) = runner.list("local_cwd")
    with state_store(airflow_env) as db:  # the retry lands on another worker
        (raw,) = db.execute("SELECT value FROM task_state_store").fetchone()
        record = json.loads(raw)
        assert record["app_handle"] == old.app_handle and record["host"]
        record["host"] = "worker-2/00000000-0000-0000-0000-000000000000/pid:[1]"
        db.execute("UPDATE task_state_store SET value = ?", (json.dumps(record),))

    cmd = dag_argv(dag_file, dag_id, "job")
    with (tmp_path / "retry.log").open("w") as out:
        subprocess.run(cmd, env=airflow_env, stdout=out, stderr=subprocess.STDOUT, timeout=300)
    output = (tmp_path / "retry.log").read_text()
    summary = json.loads(output.strip().splitlines()[-1])
    assert f"the app of an earlier try, {old.app_handle}, was launched on another host" in output
    assert "another host worker-2 (this try runs on host" in output
    handles = [a.app_handle for a in runner.list("local_cwd")]
    if on_other_host == "fail":
        assert summary["tasks"]["job"]["state"] in ("failed", "up_for_retry")
        assert handles == [old.app_handle]
    else:
        assert summary["tasks"]["job"]["state"] == "success", output[-3000:]
        assert len(handles) == 2
        assert "launching a new app (on_other_host=launch)" in output
    runner.wait(old.app_handle, wait_interval=1)


# ------------------------------------------------------------------ deadlines and cleanup


def test_execution_timeout_cancels_the_app_in_the_worker(
    airflow_env: dict[str, str], runner: Any, tmp_path: Path
) -> None:
    dag_file = write_dag(
        airflow_env,
        """
        with DAG("deadline", schedule=None, start_date=datetime(2024, 1, 1)):
            TorchXOperator(
                task_id="job",
                component="utils.sh",
                component_args=["sleep", "120"],
                execution_timeout=timedelta(seconds=4),
            )
        """,
    )
    with (tmp_path / "run.log").open("w") as out:
        subprocess.run(
            dag_argv(dag_file, "deadline"), env=airflow_env, stdout=out, stderr=subprocess.STDOUT
        )
    summary = json.loads((tmp_path / "run.log").read_text().strip().splitlines()[-1])
    assert summary["tasks"]["job"]["state"] == "failed"
    (app,) = runner.list("local_cwd")
    status = runner.wait(app.app_handle, wait_interval=1)
    assert status is not None and status.state.name == "CANCELLED"


class Store:
    """A dict with the task state store's get/set (the operator's calls, in-process)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.values[key] = json.loads(json.dumps(value))


def _launch_sleep(runner: Any) -> str:
    return runner.run_component("utils.sh", ["sleep", "120"], "local_cwd", cfg={"detach": True})


@pytest.mark.parametrize(
    ("error", "action", "expected"),
    [
        ("TRIGGER_TIMEOUT", "cancel", "CANCELLED"),
        ("Trigger failure", "cancel", "CANCELLED"),
        ("Trigger failure", "keep", "LIVE"),
    ],
)
def test_a_deferral_timeout_or_trigger_failure_stops_the_app(
    runner: Any, error: str, action: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Airflow resumes a deferred task with ``__fail__`` on a timeout or a trigger that raised."""
    monkeypatch.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    from airflow.sdk.bases.operator import TriggerFailureReason
    from airflow.sdk.exceptions import TaskDeferralError, TaskDeferralTimeout

    from torchx_airflow._reattach import AppSlot
    from torchx_airflow.operators.torchx import TorchXOperator

    handle = _launch_sleep(runner)
    store = Store()
    AppSlot(store, None).set(handle)  # what the operator stores before it defers
    op = TorchXOperator(
        task_id="t", component="utils.sh", torchx_conn_id=None, on_finish_action=action
    )
    reason = TriggerFailureReason.TRIGGER_TIMEOUT if error == "TRIGGER_TIMEOUT" else error
    expected_error = TaskDeferralTimeout if error == "TRIGGER_TIMEOUT" else TaskDeferralError
    with pytest.raises(expected_error):
        op.resume_execution("__fail__", {"error": reason}, {"task_state_store": store})
    if expected == "CANCELLED":
        status = runner.wait(handle, wait_interval=1)
        assert status is not None and status.state.name == "CANCELLED"
    else:  # kept: still starting or running
        time.sleep(1)
        status = runner.status(handle)
        assert status is not None and status.state.name in ("PENDING", "RUNNING")
        runner.cancel(handle)


def test_a_trigger_error_event_cancels_the_app(runner: Any) -> None:
    from torchx_airflow._errors import TorchXAppError
    from torchx_airflow.operators.torchx import TorchXOperator

    handle = _launch_sleep(runner)
    op = TorchXOperator(task_id="t", component="utils.sh", torchx_conn_id=None)
    event = {"status": "error", "app_handle": handle, "message": "could not follow"}
    with pytest.raises(TorchXAppError, match="could not follow"):
        op.execute_complete({}, event)  # type: ignore[arg-type]
    status = runner.wait(handle, wait_interval=1)
    assert status is not None and status.state.name == "CANCELLED"


def test_the_deferral_timeout_is_what_is_left_of_execution_timeout(
    monkeypatch: pytest.MonkeyPatch, runner: Any
) -> None:
    import datetime as dt
    from types import SimpleNamespace

    from torchx_airflow._deferred import trigger_for
    from torchx_airflow._manager import AppManager
    from torchx_airflow.operators.torchx import TorchXOperator

    monkeypatch.setenv("AIRFLOW__TORCHX__DEFER_LOCAL_APPS", "true")
    op = TorchXOperator(
        task_id="t",
        component="utils.sh",
        torchx_conn_id=None,
        deferrable=True,
        do_xcom_push=False,
        execution_timeout=dt.timedelta(minutes=10),
    )
    started = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=4)
    store = Store()
    context = {"ti": SimpleNamespace(start_date=started), "task_state_store": store}
    deferral = trigger_for(AppManager(op, context), "local_cwd://torchx/sh-x")
    assert deferral is not None
    trigger, timeout = deferral  # the trigger stops at the deadline; Airflow's timeout: + 60 s
    assert timeout is not None and 410 <= timeout.total_seconds() <= 420
    assert trigger.deadline is not None and 350 <= trigger.deadline - time.time() <= 360
    assert store.values["torchx_app"]["app_handle"] == "local_cwd://torchx/sh-x"


# ------------------------------------------------------------------ secrets and XComs


def test_local_replicas_do_not_get_airflow_secrets(
    airflow_env: dict[str, str], tmp_path: Path
) -> None:
    env = {
        **airflow_env,
        "AIRFLOW_CONN_WAREHOUSE": "postgres://user:pw@db/x",
        "AIRFLOW_VAR_API_KEY": "v",
        "AIRFLOW__API_AUTH__JWT_SECRET": "jwt",
        "AIRFLOW__API__SECRET_KEY": "k",
        "AIRFLOW__CORE__FERNET_KEY": "f",
        "AIRFLOW__SECRETS__BACKEND_KWARGS": "{}",
        "AIRFLOW__WEBSERVER__TOKEN_TTL": "1",
    }
    dag_file = write_dag(
        env,
        """
        with DAG("secrets", schedule=None, start_date=datetime(2024, 1, 1)):
            TorchXOperator(
                task_id="env",
                component="utils.sh",
                component_args=["sh", "-c", "env | cut -d= -f1 | grep AIRFLOW | sort"],
                env={"AIRFLOW_VAR_SET_BY_THE_TASK": "kept"},
                env_allow=["AIRFLOW_HOME"],
            )
        """,
    )
    summary, output = run_logged(env, dag_argv(dag_file, "secrets"), tmp_path / "run.log")
    assert summary["tasks"]["env"]["state"] == "success", output[-3000:]
    seen = set(re.findall(r"\[sh/0\] (\S+)", output))
    # what the task sets, and what it forwards explicitly (env_allow); nothing else of Airflow
    assert seen == {"AIRFLOW_VAR_SET_BY_THE_TASK", "AIRFLOW_HOME"}
    for secret in (
        "AIRFLOW_CONN_WAREHOUSE",
        "AIRFLOW_VAR_API_KEY",
        "AIRFLOW__API_AUTH__JWT_SECRET",
        "AIRFLOW__API__SECRET_KEY",
        "AIRFLOW__CORE__FERNET_KEY",
        "AIRFLOW__SECRETS__BACKEND_KWARGS",
        "AIRFLOW__WEBSERVER__TOKEN_TTL",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
    ):
        assert secret not in seen


def test_do_xcom_push_false_pushes_nothing_even_on_failure(
    airflow_env: dict[str, str], tmp_path: Path
) -> None:
    dag_file = write_dag(
        airflow_env,
        """
        with DAG("noxcom", schedule=None, start_date=datetime(2024, 1, 1)):
            TorchXOperator(
                task_id="ok", component="utils.sh", component_args=["sleep", "2"],
                do_xcom_push=False,
            )
            TorchXOperator(
                task_id="bad", component="utils.sh", component_args=["false"], do_xcom_push=False
            )
        """,
    )
    with (tmp_path / "run.log").open("w") as out:
        subprocess.run(dag_argv(dag_file, "noxcom"), env=airflow_env, stdout=out, stderr=out)
    summary = json.loads((tmp_path / "run.log").read_text().strip().splitlines()[-1])
    assert summary["tasks"]["ok"]["state"] == "success"
    assert summary["tasks"]["bad"]["state"] == "failed"
    assert summary["tasks"]["ok"]["xcom"] == {} and summary["tasks"]["bad"]["xcom"] == {}


@pytest.mark.docker
def test_on_finish_action_delete_removes_the_app_once_the_task_is_done(
    airflow_env: dict[str, str], runner: Any, tmp_path: Path
) -> None:
    env = {**airflow_env, "DOCKER_HOST": os.environ["DOCKER_HOST"]}
    dag_file = write_dag(
        env,
        f"""
        with DAG("deleted", schedule=None, start_date=datetime(2024, 1, 1)):
            args = ["--image", "{BUSYBOX}", "sleep", "1"]
            TorchXOperator(
                task_id="ok", component="utils.sh", component_args=args,
                scheduler="local_docker", on_finish_action="delete",
            )
            TorchXOperator(
                task_id="kept", component="utils.sh", component_args=args,
                scheduler="local_docker",
            )
        """,
    )
    summary, output = run_logged(env, dag_argv(dag_file, "deleted"), tmp_path / "run.log")
    ok = summary["tasks"]["ok"]["xcom"]["return_value"]
    kept = summary["tasks"]["kept"]["xcom"]["return_value"]
    try:
        assert ok["state"] == kept["state"] == "SUCCEEDED", output[-3000:]
        assert runner.status(ok["app_handle"]) is None  # its containers and network are gone
        assert runner.status(kept["app_handle"]) is not None
    finally:
        runner.delete(kept["app_handle"])


K8S_DAG = """
with DAG("crash_k8s", schedule=None, start_date=datetime(2024, 1, 1)):
    TorchXOperator(
        task_id="job",
        component="utils.sh",
        component_args=[
            "--image", "torchx-flow/python:3.11", "--mounts", "{mount}", "sh", "-c", "{command}"
        ],
        scheduler="kubernetes",
        retries=2,
    )
"""


@pytest.mark.k8s
def test_kill_9_before_the_store_write_leaves_one_kubernetes_app_in_the_connections_namespace(
    airflow_env: dict[str, str], runner: Any, tmp_path: Path
) -> None:
    from _k8s_live import api_client, namespace

    from torchx.runner.labels import find_apps

    kubeconfig = Path(os.environ["KUBECONFIG"]).read_text()
    with namespace(api_client()) as ns:
        cfg = {"namespace": ns, "mode": "plain"}
        extra = {"kubeconfig": kubeconfig, "scheduler_cfg": cfg}
        connection = json.dumps({"conn_type": "torchx", "extra": extra})
        env = {**airflow_env, "AIRFLOW_CONN_TORCHX_DEFAULT": connection}
        env.pop("KUBECONFIG", None)  # the app's namespace is known from the connection only
        gate = tmp_path / "gate"
        fields = {"mount": gate_mount(gate), "command": gate_command(str(gate), "echo done")}
        dag_file = write_dag(env, K8S_DAG.format(**fields))

        def apps() -> list[Any]:
            return find_apps(runner, "kubernetes", {"airflow-dag-id": "crash_k8s"}, cfg)

        kill_9_when(dag_argv(dag_file, "crash_k8s"), env, tmp_path / "first.log", apps)
        (app,) = apps()
        with state_store(env) as db:  # as if the worker died before writing the handle
            db.execute("DELETE FROM task_state_store")
        retry = dag_argv(dag_file, "crash_k8s", "job")
        code, output = run_opening_gate(retry, env, tmp_path / "retry.log", "-> reattach", gate)
        assert code == 0, output[-3000:]
        task = json.loads(output.strip().splitlines()[-1])["tasks"]["job"]
        assert task["state"] == "success", output[-3000:]
        assert "by its labels" in output and "-> reattach" in output
        assert task["xcom"]["return_value"]["app_handle"] == app.app_handle
        assert len(apps()) == 1
