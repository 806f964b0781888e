"""The deferred task's trigger follows like the worker: its own deadline, logs while deferred.

Real Airflow (``dag.test()`` on SQLite, in a child process, which runs the trigger in line and
ignores the deferral's timeout, as ``airflow dags test`` does) with real local_cwd apps; the
triggerer shares the worker's host here (``defer_local_apps``). The async trigger itself is
also run directly with ``asyncio`` against real apps (start-up reason, transient outage).
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _airflow_support import airflow_home_env, dag_argv, import_airflow_isolated
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
    env = airflow_home_env(tmp_path, tmp_path_factory)
    return {**env, "AIRFLOW__TORCHX__DEFER_LOCAL_APPS": "true"}  # dag.test: same host


@pytest.fixture
def write_dag(airflow_env: dict[str, str]) -> Callable[[str], Path]:
    return functools.partial(write_dag_file, airflow_env)


def run_dag(env: dict[str, str], dag_file: Path, dag_id: str) -> tuple[dict[str, Any], str]:
    proc = subprocess.run(
        dag_argv(dag_file, dag_id), env=env, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stdout + proc.stderr


def local_apps(name: str) -> list[Any]:
    from torchx.runner import get_runner

    with get_runner() as runner:
        return [a for a in runner.list("local_cwd") if a.name == name]


def test_a_deferred_task_stops_at_its_execution_timeout_and_cancels_the_app(
    write_dag: Callable[[str], Path], airflow_env: dict[str, str]
) -> None:
    dag_file = write_dag(
        """
        with DAG("slow", schedule=None, start_date=datetime(2024, 1, 1)):
            TorchXOperator(
                task_id="long",
                component="utils.sh",
                component_args=["sleep", "120"],
                deferrable=True,
                poll_interval=1,
                execution_timeout=timedelta(seconds=5),
            )
        """
    )
    summary, output = run_dag(airflow_env, dag_file, "slow")
    assert "running trigger in line" in output  # it really deferred
    assert summary["tasks"]["long"]["state"] == "failed", output[-3000:]
    assert "its deadline passed" in output
    (app,) = local_apps("sh")
    assert app.state.name == "CANCELLED"  # by the trigger at the deadline, not 120 s later


def test_replica_lines_reach_the_task_log_while_deferred_once_each(
    write_dag: Callable[[str], Path], airflow_env: dict[str, str]
) -> None:
    dag_file = write_dag(
        """
        with DAG("chatty", schedule=None, start_date=datetime(2024, 1, 1)):
            TorchXOperator(
                task_id="talk",
                component="utils.python",
                component_args=[
                    "-c",
                    "import time\\nfor i in range(30):\\n    print('line', i, flush=True);"
                    " time.sleep(0.05)",
                ],
                deferrable=True,
                poll_interval=1,
            )
        """
    )
    summary, output = run_dag(airflow_env, dag_file, "chatty")
    assert summary["tasks"]["talk"]["state"] == "success", output[-3000:]
    assert "running trigger in line" in output
    lines = [ln for ln in output.splitlines() if "[python/0] line " in ln]
    numbers = [int(ln.rsplit("[python/0] line ", 1)[1].split()[0]) for ln in lines]
    assert numbers == list(range(30))  # from the first line, none twice after the resume
    trigger_part = output.split("running trigger in line", 1)[1].split("Trigger completed", 1)[0]
    assert "[python/0] line 0" in trigger_part  # logged by the trigger, not copied afterwards


# ---------------------------------------------------------------------------- trigger directly


@pytest.fixture(scope="module")
def _airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    import_airflow_isolated(
        tmp_path_factory.mktemp("airflow_home"), "torchx_airflow.triggers.torchx"
    )
    yield


def run_events(trigger: Any) -> list[dict[str, Any]]:
    async def collect() -> list[dict[str, Any]]:
        return [event.payload async for event in trigger.run()]

    return asyncio.run(collect())


def test_the_trigger_event_says_how_far_it_logged_and_the_worker_shows_only_the_rest(
    _airflow: None,
) -> None:
    from torchx.runner import get_runner
    from torchx_airflow.triggers._resume import resumed_result
    from torchx_airflow.triggers.torchx import TorchXJobTrigger

    with get_runner() as runner:
        handle = runner.run_component(
            "utils.sh", ["sh", "-c", "for i in 1 2 3; do echo l$i; done"], "local_cwd"
        )
        trigger = TorchXJobTrigger(handle, None, poll_interval=0.2, stream_logs=True)
        logged: list[str] = []
        trigger.log.info = lambda fmt, *args: logged.append(fmt % args)  # type: ignore[method-assign]
        (event,) = run_events(trigger)
        assert event["status"] == "success" and event["logs_shown"] == {"sh/0": 3}
        assert [x for x in logged if x.startswith("[sh/0]")] == [
            "[sh/0] l1",
            "[sh/0] l2",
            "[sh/0] l3",
        ]
        shown: list[str] = []
        result = resumed_result(runner, event, on_log=shown.append, stream_logs=True)
        assert result.succeeded and shown == []  # nothing twice
        shown_all: list[str] = []
        resumed_result(
            runner, {**event, "logs_shown": {"sh/0": 1}}, on_log=shown_all.append, stream_logs=True
        )
        assert shown_all == ["[sh/0] l2", "[sh/0] l3"]


def test_the_trigger_keeps_the_app_at_its_deadline_with_keep(_airflow: None) -> None:
    import time

    from torchx.runner import get_runner
    from torchx_airflow.triggers._resume import resumed_result
    from torchx_airflow.triggers.torchx import TorchXJobTrigger

    with get_runner() as runner:
        handle = runner.run_component(
            "utils.sh", ["sleep", "60"], "local_cwd", cfg={"detach": True}
        )
        try:
            trigger = TorchXJobTrigger(
                handle, None, poll_interval=0.2, on_kill_action="keep", deadline=time.time() + 1
            )
            classpath, kwargs = trigger.serialize()
            assert TorchXJobTrigger(**kwargs).serialize() == (classpath, kwargs)
            (event,) = run_events(trigger)
            assert event["status"] == "failed" and event["deadline_expired"]
            assert not event["cancelled"] and "at its deadline (kept running)" in event["message"]
            result = resumed_result(runner, event, on_log=print, stream_logs=True)  # no wait
            assert result.deadline_expired and result.status is not None
            assert not result.status.is_terminal()
        finally:
            runner.cancel(handle)


def test_an_unanswering_scheduler_is_an_unreachable_error_event_after_transient_timeout(
    _airflow: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from torchx_airflow.triggers.torchx import TorchXJobTrigger

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\n"
    )
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    handle = "kubernetes://torchx/default:gone-app"
    trigger = TorchXJobTrigger(handle, None, poll_interval=0.2, transient_timeout=2)
    assert trigger.serialize()[1]["transient_timeout"] == 2
    (event,) = run_events(trigger)
    assert event["status"] == "error" and event["unreachable"] is True
    assert event["message"].startswith(f"could not read the status of TorchX app {handle}:")
    assert "did not answer for" in event["message"]
