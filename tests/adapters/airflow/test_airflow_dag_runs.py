"""TorchXOperator under a real Airflow: dag.test() on SQLite, each run in its own process.

Airflow reads its configuration when first imported, so every run happens in a child process
(``python -m torchx_airflow.local test``) with an isolated AIRFLOW_HOME; TorchX apps
are real local_cwd apps under the test's TORCHX_HOME, inspected from here with a Runner.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _airflow_support import airflow_home_env, dag_argv, wait_for
from _airflow_support import write_dag as write_dag_file

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("airflow") is None,
        reason="apache-airflow is not installed (pip install -e '.[airflow]')",
    ),
    pytest.mark.slow,
]


@pytest.fixture
def airflow_env(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return airflow_home_env(tmp_path, tmp_path_factory)


@pytest.fixture
def write_dag(airflow_env: dict[str, str]) -> Callable[[str], Path]:
    return functools.partial(write_dag_file, airflow_env)


def run_dag(
    env: dict[str, str], dag_file: Path, dag_id: str, retry_task: str = ""
) -> tuple[dict[str, Any], str]:
    cmd = dag_argv(dag_file, dag_id, retry_task)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stdout + proc.stderr


def runner() -> Any:
    from torchx.runner import get_runner

    return get_runner()


def local_apps() -> list[Any]:
    return runner().list("local_cwd")


def processes_of(handle: str) -> list[int]:
    """Pids whose environment carries TORCHX_JOB_ID=handle (the app's replicas)."""
    needle = f"TORCHX_JOB_ID={handle}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def test_pipeline_blocking_and_deferrable_with_lineage(write_dag, airflow_env) -> None:
    dag_file = write_dag(
        """
        with DAG("pipe", schedule=None, start_date=datetime(2024, 1, 1)):
            first = TorchXOperator(
                task_id="first", component="utils.echo", component_args={"msg": "{{ dag.dag_id }}"}
            )
            second = TorchXOperator(
                task_id="second",
                component="utils.python",
                component_args=["-c", "import os; print('parent', os.environ['TORCHX_PARENT_RUN_ID'])"],
                parent_run_id="{{ ti.xcom_pull(task_ids='first')['tracker_run_id'] }}",
                deferrable=True,
                poll_interval=1,
            )
            first >> second
        """
    )
    # dag.test runs the trigger in this process: it shares the app's host
    env = {**airflow_env, "AIRFLOW__TORCHX__DEFER_LOCAL_APPS": "true"}
    summary, output = run_dag(env, dag_file, "pipe")
    assert summary["state"] == "success", output[-3000:]
    first = summary["tasks"]["first"]["xcom"]["return_value"]
    assert first["state"] == "SUCCEEDED"
    assert first["app_handle"].startswith("local_cwd://torchx/echo-")
    assert first["app_id"] == first["app_handle"].rsplit("/", 1)[-1]
    assert first["tracker_run_id"] == first["app_handle"]
    assert first["ui_url"]
    assert "[echo/0] pipe" in output  # replica logs are in the task log
    second = summary["tasks"]["second"]["xcom"]["return_value"]
    assert "running trigger in line" in output  # it really deferred
    lines = "".join(runner().log_lines(second["app_handle"], "python"))
    assert f"parent {first['app_handle']}" in lines


def test_app_handle_xcom_is_pushed_while_a_longer_app_runs(write_dag, airflow_env) -> None:
    dag_file = write_dag(
        """
        with DAG("handles", schedule=None, start_date=datetime(2024, 1, 1)):
            TorchXOperator(task_id="short", component="utils.echo")
            TorchXOperator(task_id="long", component="utils.sh", component_args=["sleep", "2"])
        """
    )
    summary, output = run_dag(airflow_env, dag_file, "handles")
    assert summary["state"] == "success", output[-3000:]
    short, long = summary["tasks"]["short"]["xcom"], summary["tasks"]["long"]["xcom"]
    assert "app_handle" not in short  # ended within a second: the result carries it
    assert short["return_value"]["app_handle"].startswith("local_cwd://torchx/echo-")
    assert long["app_handle"] == long["return_value"]["app_handle"]


def test_short_app_is_not_kept_for_reattach_and_a_retry_launches_again(
    write_dag, airflow_env
) -> None:
    dag_file = write_dag(
        """
        with DAG("short", schedule=None, start_date=datetime(2024, 1, 1)):
            TorchXOperator(task_id="t", component="utils.echo", component_args=["--msg", "hi"])
        """
    )
    summary, output = run_dag(airflow_env, dag_file, "short")
    assert summary["tasks"]["t"]["state"] == "success", output[-3000:]
    assert "kept the app handle" not in output  # ended before the 50 ms mark: no API call
    first = summary["tasks"]["t"]["xcom"]["return_value"]["app_handle"]

    summary, output = run_dag(airflow_env, dag_file, "short", retry_task="t")
    assert summary["tasks"]["t"]["state"] == "success", output[-3000:]
    assert "app of a previous try" not in output  # nothing was kept: launched again
    assert summary["tasks"]["t"]["xcom"]["return_value"]["app_handle"] != first
    assert len(local_apps()) == 2


def test_deferrable_local_app_waits_in_the_worker_by_default(write_dag, airflow_env) -> None:
    dag_file = write_dag(
        """
        with DAG("local", schedule=None, start_date=datetime(2024, 1, 1)):
            TorchXOperator(
                task_id="t", component="utils.echo", component_args={"msg": "hi"}, deferrable=True
            )
        """
    )
    summary, output = run_dag(airflow_env, dag_file, "local")
    assert summary["state"] == "success", output[-3000:]
    assert "so the task waits for it in the worker instead" in output
    assert "defer_local_apps" in output
    assert "running trigger in line" not in output  # it did not defer
    assert "[echo/0] hi" in output


def test_failing_step_fails_task_with_app_error_and_skips_downstream(
    write_dag, airflow_env
) -> None:
    dag_file = write_dag(
        """
        with DAG("fails", schedule=None, start_date=datetime(2024, 1, 1)):
            bad = TorchXOperator(
                task_id="bad",
                component="utils.python",
                component_args=["-c", "raise SystemExit('bad input: no rows')"],
            )
            after = TorchXOperator(task_id="after", component="utils.echo")
            bad >> after
        """
    )
    summary, output = run_dag(airflow_env, dag_file, "fails")
    assert summary["state"] == "failed"
    assert summary["tasks"]["bad"]["state"] == "failed"
    assert summary["tasks"]["after"]["state"] == "upstream_failed"
    assert summary["tasks"]["bad"]["xcom"]["state"] == "FAILED"
    bad = summary["tasks"]["bad"]["xcom"]
    assert bad["app_handle"] == f"local_cwd://torchx/{bad['app_id']}"
    assert "TorchXAppError" in output and "ended FAILED" in output
    assert "bad input: no rows" in output
    # the message ends with the tail of the failed replica (torchx.runner.follow)
    assert "log lines of python/0:" in output


def test_sigterm_on_task_cancels_app_and_leaves_no_processes(write_dag, airflow_env) -> None:
    dag_file = write_dag(
        """
        with DAG("killed", schedule=None, start_date=datetime(2024, 1, 1)):
            TorchXOperator(task_id="long", component="utils.sh", component_args=["sleep", "120"])
        """
    )
    proc = subprocess.Popen(
        dag_argv(dag_file, "killed"),
        env=airflow_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        app = wait_for(lambda: [a for a in local_apps() if a.state.name == "RUNNING"], 120)[0]
        handle = app.app_handle
        wait_for(lambda: processes_of(handle), 60)
        proc.send_signal(signal.SIGTERM)  # what Airflow's supervisor sends a killed task
        status = runner().wait(handle, wait_interval=1)
        assert status is not None and status.state.name == "CANCELLED"
        wait_for(lambda: not processes_of(handle), 30)
    finally:
        proc.kill()
        proc.wait()


def test_kill_9_then_retry_reattaches_without_duplicate(write_dag, airflow_env) -> None:
    marker = Path(airflow_env["AIRFLOW_HOME"]) / "go"
    dag_file = write_dag(
        f"""
        with DAG("crash", schedule=None, start_date=datetime(2024, 1, 1)):
            TorchXOperator(
                task_id="job",
                component="utils.python",
                component_args=[
                    "-c",
                    "import os, time\\n"
                    "while not os.path.exists({str(marker)!r}): time.sleep(0.1)\\n"
                    "print('job done')",
                ],
                retries=2,
            )
        """
    )
    first_log = Path(airflow_env["AIRFLOW_HOME"]) / "first.log"
    with first_log.open("w") as out:
        first = subprocess.Popen(
            dag_argv(dag_file, "crash"), env=airflow_env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        # the handle is in the task state store once the task says so
        wait_for(lambda: "kept the app handle for re-attach" in first_log.read_text(), 120)
        app = wait_for(lambda: [a for a in local_apps() if a.state.name == "RUNNING"], 120)[0]
        first.send_signal(signal.SIGKILL)  # the worker dies while the app runs
        first.wait()
    finally:
        first.kill()
    assert runner().status(app.app_handle).state.name == "RUNNING"  # detached: it survives

    log = Path(airflow_env["AIRFLOW_HOME"]) / "retry.log"
    cmd = dag_argv(dag_file, "crash")
    cmd[3:6] = ["retry", str(dag_file), "crash", "job"]
    with log.open("w") as out:
        retry = subprocess.Popen(cmd, env=airflow_env, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: "is RUNNING -> reattach" in log.read_text(), 120)
            marker.touch()  # the app finishes while the new try waits on it
            assert retry.wait(timeout=120) == 0
        finally:
            retry.kill()
    output = log.read_text()
    task = json.loads(output.strip().splitlines()[-1])["tasks"]["job"]
    assert task["state"] == "success", output[-3000:]
    assert task["xcom"]["return_value"]["app_handle"] == app.app_handle
    assert "[python/0] job done" in output
    assert len(local_apps()) == 1  # 0 duplicate jobs

    # the try that saw the app end marked it processed: clearing the task (a later try, with the
    # handle still in the task state store) runs a new app instead of reusing the old result
    marker.unlink()
    log2 = Path(airflow_env["AIRFLOW_HOME"]) / "clear.log"
    with log2.open("w") as out:
        again = subprocess.Popen(cmd, env=airflow_env, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: len(local_apps()) == 2, 120)
            marker.touch()
            assert again.wait(timeout=120) == 0
        finally:
            again.kill()
    output = log2.read_text()
    task = json.loads(output.strip().splitlines()[-1])["tasks"]["job"]
    assert task["state"] == "success", output[-3000:]
    assert "-> reuse" not in output and "-> reattach" not in output
    assert task["xcom"]["return_value"]["app_handle"] != app.app_handle
