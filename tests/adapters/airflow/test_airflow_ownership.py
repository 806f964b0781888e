"""Ownership of an app between the tries of a task instance (issue 25 item 3).

Real Airflow (dag.test() in a child process, and the next try of a task of that run as the
scheduler starts it after a retry) and real ``local_cwd`` apps. The stored placement is
rewritten to play a worker container restarted on the same host, or a host that rebooted.
"""

from __future__ import annotations

import importlib.util
import json
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _airflow_support import (
    airflow_home_env,
    dag_argv,
    kill_9_when,
    run_logged,
    state_store,
    wait_for,
    write_dag,
)

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("airflow") is None,
        reason="apache-airflow is not installed (pip install -e '.[airflow]')",
    ),
    pytest.mark.slow,
]

WAITING_DAG = """
with DAG("{dag_id}", schedule=None, start_date=datetime(2024, 1, 1)):
    TorchXOperator(
        task_id="job",
        component="utils.python",
        component_args=[
            "-c",
            "import os, time\\n"
            "while not os.path.exists({marker!r}): time.sleep(0.1)\\n"
            "print('job done')",
        ],
        {extra}
    )
"""


@pytest.fixture
def airflow_env(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return airflow_home_env(tmp_path, tmp_path_factory)


@pytest.fixture
def runner() -> Iterator[Any]:
    from torchx.runner import get_runner

    with get_runner() as r:
        yield r
        for app in r.list("local_cwd"):  # whatever a test left running
            if app.state.name not in ("SUCCEEDED", "FAILED", "CANCELLED"):
                r.cancel(app.app_handle)


def _dag(env: dict[str, str], dag_id: str, marker: Path, extra: str = "") -> Path:
    body = WAITING_DAG.format(dag_id=dag_id, marker=str(marker), extra=extra)
    return write_dag(env, body)


def _record(env: dict[str, str]) -> dict[str, Any]:
    with state_store(env) as db:
        (raw,) = db.execute("SELECT value FROM task_state_store").fetchone()
    return json.loads(raw)


def _write_record(env: dict[str, str], record: dict[str, Any]) -> None:
    with state_store(env) as db:
        db.execute("UPDATE task_state_store SET value = ?", (json.dumps(record),))


def test_a_superseded_try_sigtermed_after_the_retry_reattached_leaves_the_app(
    airflow_env: dict[str, str], runner: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "go"
    dag_file = _dag(airflow_env, "zombie", marker, "retries=2,")
    first_log, retry_log = tmp_path / "first.log", tmp_path / "retry.log"
    with first_log.open("w") as out:
        first = subprocess.Popen(
            dag_argv(dag_file, "zombie"), env=airflow_env, stdout=out, stderr=subprocess.STDOUT
        )
    retry = None
    try:
        wait_for(lambda: "kept the app handle for re-attach" in first_log.read_text())
        (app,) = runner.list("local_cwd")
        with retry_log.open("w") as out:  # try 2 starts while try 1 still follows the app
            retry = subprocess.Popen(
                dag_argv(dag_file, "zombie", "job"),
                env=airflow_env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_for(lambda: f"try 2 owns TorchX app {app.app_handle}" in retry_log.read_text())
        assert _record(airflow_env)["owner"] == 2
        first.send_signal(signal.SIGTERM)  # Airflow's supervisor ends the superseded try 1
        wait_for(lambda: "try 2 re-attached to it and owns it" in first_log.read_text(), 60)
        status = runner.status(app.app_handle)
        assert status is not None and status.state.name == "RUNNING"
        marker.touch()
        retry.wait(timeout=300)
    finally:
        for proc in (first, retry):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    output = retry_log.read_text()
    summary = json.loads(output.strip().splitlines()[-1])
    assert summary["tasks"]["job"]["state"] == "success", output[-3000:]
    assert summary["tasks"]["job"]["xcom"]["return_value"]["app_handle"] == app.app_handle
    assert [a.app_handle for a in runner.list("local_cwd")] == [app.app_handle]  # one app


def test_keep_past_the_deadline_leaves_the_app_to_the_retry_not_a_second_app(
    airflow_env: dict[str, str], runner: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "go"
    extra = 'on_finish_action="keep", execution_timeout=timedelta(seconds=6),'
    dag_file = _dag(airflow_env, "kept", marker, extra)
    summary, output = run_logged(airflow_env, dag_argv(dag_file, "kept"), tmp_path / "first.log")
    assert summary["tasks"]["job"]["state"] == "failed", output[-3000:]
    (app,) = runner.list("local_cwd")
    assert app.state.name == "RUNNING"  # kept
    assert app.app_handle not in _record(airflow_env)["processed"]
    marker.touch()
    retry_cmd = dag_argv(dag_file, "kept", "job")
    summary, output = run_logged(airflow_env, retry_cmd, tmp_path / "retry.log")
    assert summary["tasks"]["job"]["state"] == "success", output[-3000:]
    assert summary["tasks"]["job"]["xcom"]["return_value"]["app_handle"] == app.app_handle
    assert [a.app_handle for a in runner.list("local_cwd")] == [app.app_handle]  # one app


@pytest.mark.parametrize("restart", ["container", "reboot"])
def test_a_restart_on_the_same_host_never_fails_the_retry(
    airflow_env: dict[str, str], runner: Any, tmp_path: Path, restart: str
) -> None:
    # container: the record of an older version (hostname/boot id/pid namespace) with another
    # pid namespace: the same host, the app is followed (it used to fail every retry);
    # reboot: another boot id on this host: the app is gone, a new one is launched
    marker = tmp_path / "go"
    dag_file = _dag(airflow_env, f"restart_{restart}", marker, "retries=2,")
    first = tmp_path / "first.log"
    ready = lambda: "kept the app handle for re-attach" in first.read_text()  # noqa: E731
    kill_9_when(dag_argv(dag_file, f"restart_{restart}"), airflow_env, first, ready)
    (old,) = runner.list("local_cwd")
    record = _record(airflow_env)
    assert record["host"].startswith(f"host:{socket.gethostname()}/")
    boot = record["host"].partition("/")[2]
    if restart == "container":
        record["host"] = f"{socket.gethostname()}/{boot}/pid:[4026531836]"
    else:
        record["host"] = f"host:{socket.gethostname()}/00000000-0000-0000-0000-000000000000"
    _write_record(airflow_env, record)
    marker.touch()
    retry_cmd = dag_argv(dag_file, f"restart_{restart}", "job")
    summary, output = run_logged(airflow_env, retry_cmd, tmp_path / "retry.log")
    assert summary["tasks"]["job"]["state"] == "success", output[-3000:]
    handle = summary["tasks"]["job"]["xcom"]["return_value"]["app_handle"]
    if restart == "container":
        assert handle == old.app_handle  # followed (or reused, had it ended), not replaced
    else:
        assert handle != old.app_handle
        assert "ran on this host before it rebooted" in output
    runner.wait(old.app_handle, wait_interval=1)


@pytest.mark.docker
def test_a_docker_app_of_another_engine_is_not_relaunched_beside_it(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, runner: Any
) -> None:
    # the record names the engine (docker:<id>); a retry whose engine differs fails with the
    # app's handle and place instead of launching a second app; at most twice per app
    from torchx.runner.labels import find_apps

    env = airflow_home_env(tmp_path, tmp_path_factory)  # after the docker marker's DOCKER_HOST
    dag_id = "other_engine"
    dag_file = write_dag(
        env,
        f"""
        with DAG("{dag_id}", schedule=None, start_date=datetime(2024, 1, 1)):
            TorchXOperator(
                task_id="job",
                component="utils.sh",
                component_args=["--image", "torchx-flow/busybox:latest", "sleep", "60"],
                scheduler="local_docker",
                retries=3,
            )
        """,
    )

    def apps() -> list[Any]:
        return find_apps(runner, "local_docker", {"airflow-dag-id": dag_id})

    first = tmp_path / "first.log"
    try:
        kill_9_when(dag_argv(dag_file, dag_id), env, first, lambda: _stored(env))
        (app,) = apps()
        record = _record(env)
        assert record["host"].startswith("docker:") and record["owner"] == 1
        record["host"] = "docker:OTHER-ENGINE-ID"  # the retry runs beside another engine
        _write_record(env, record)
        for count in (1, 2):
            log = tmp_path / f"retry{count}.log"
            with log.open("w") as out:
                subprocess.run(
                    dag_argv(dag_file, dag_id, "job"), env=env, stdout=out, stderr=subprocess.STDOUT
                )
            output = log.read_text()
            assert f"{app.app_handle}, was launched on another Docker engine OTHER-ENGINE" in output
            assert f"[{count} of 2]" in output
            assert [a.app_handle for a in apps()] == [app.app_handle]  # no second app
        assert _record(env)["refusals"] == 2
    finally:
        for found in apps():
            runner.delete(found.app_handle)


def _stored(env: dict[str, str]) -> bool:
    with state_store(env) as db:
        return db.execute("SELECT COUNT(*) FROM task_state_store").fetchone()[0] > 0
