"""Deferral of host-local apps: the triggerer hands them back when it is not on their host.

The compose stack test (tests/dags/test_dags_compose_stack.py) runs this across containers;
here a trigger is told the app was launched on another host, against a real local_cwd app.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from _airflow_support import import_airflow_isolated

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("airflow") is None,
    reason="apache-airflow is not installed (pip install -e '.[airflow]')",
)

ELSEWHERE = "another-host/00000000-0000-0000-0000-000000000000/pid:[1]"


@pytest.fixture(scope="module", autouse=True)
def _airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Imports Airflow with an isolated AIRFLOW_HOME and undoes its root-logger changes."""
    import_airflow_isolated(
        tmp_path_factory.mktemp("airflow_home"),
        "torchx_airflow.operators.torchx",
        "torchx_airflow.triggers.torchx",
    )
    yield


def launch(args: list[str]) -> str:
    from torchx.runner import get_runner

    return get_runner().run_component("utils.sh", args, "local_cwd", cfg={"detach": True})


def run_events(trigger: Any) -> list[dict[str, Any]]:
    async def collect() -> list[dict[str, Any]]:
        return [event.payload async for event in trigger.run()]

    return asyncio.run(collect())


def test_only_host_local_apps_launched_elsewhere_need_the_worker() -> None:
    from torchx_airflow._deferral import host_identity, needs_worker

    here = host_identity()
    assert here == host_identity() and here.count("/") >= 2
    assert needs_worker("local_cwd://torchx/sh-1", ELSEWHERE)
    assert not needs_worker("local_cwd://torchx/sh-1", here)
    assert not needs_worker("local_cwd://torchx/sh-1", None)
    assert not needs_worker("kubernetes://default/sh-1", ELSEWHERE)


def test_local_apps_wait_in_the_worker_unless_the_triggerer_shares_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torchx_airflow._deferral import wait_in_worker_reason

    monkeypatch.delenv("AIRFLOW__TORCHX__DEFER_LOCAL_APPS", raising=False)
    reason = wait_in_worker_reason("local_cwd://torchx/sh-1")
    assert "local_cwd://torchx/sh-1" in reason and "waits for it in the worker" in reason
    assert "defer_local_apps" in reason  # says how to defer anyway
    assert wait_in_worker_reason("kubernetes://default/sh-1") == ""
    monkeypatch.setenv("AIRFLOW__TORCHX__DEFER_LOCAL_APPS", "true")
    assert wait_in_worker_reason("local_cwd://torchx/sh-1") == ""


def test_provider_declares_the_defer_local_apps_option() -> None:
    from torchx_airflow.provider_info import get_provider_info

    option = get_provider_info()["config"]["torchx"]["options"]["defer_local_apps"]
    assert option["type"] == "boolean" and option["default"] == "False"


def test_trigger_elsewhere_hands_the_app_back_untouched_and_does_not_cancel() -> None:
    from torchx.runner import get_runner
    from torchx_airflow.triggers.torchx import TorchXJobTrigger

    handle = launch(["sleep", "30"])
    runner = get_runner()
    try:
        trigger = TorchXJobTrigger(handle, None, poll_interval=0.5, worker_host=ELSEWHERE)
        (event,) = run_events(trigger)
        assert event["status"] == "wait_in_worker" and event["app_handle"] == handle
        assert "waits for it in the worker" in event["message"]
        assert "another-host" in event["message"]
        asyncio.run(trigger.on_kill())  # cannot reach the app from "another host": no cancel
        status = runner.status(handle)
        assert status is not None and status.state.name in ("PENDING", "RUNNING")
    finally:
        runner.cancel(handle)
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state.name == "CANCELLED"


def test_trigger_on_the_workers_host_follows_the_app() -> None:
    from torchx_airflow._deferral import host_identity
    from torchx_airflow.triggers.torchx import TorchXJobTrigger

    handle = launch(["echo", "here"])
    trigger = TorchXJobTrigger(handle, None, poll_interval=0.5, worker_host=host_identity())
    (event,) = run_events(trigger)
    assert event["status"] == "success"
    classpath, kwargs = trigger.serialize()
    assert kwargs["worker_host"] == host_identity()
    assert TorchXJobTrigger(**kwargs).serialize() == (classpath, kwargs)


def test_operator_resumed_with_a_handback_waits_in_the_worker(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    from torchx_airflow._deferral import handback_payload
    from torchx_airflow.operators.torchx import TorchXOperator

    handle = launch(["sh", "-c", "sleep 1; echo from-the-replica"])
    op = TorchXOperator(task_id="t", component="utils.echo", torchx_conn_id=None)
    with caplog.at_level(logging.INFO):
        result = op.execute_complete({}, handback_payload(handle, ELSEWHERE))  # type: ignore[arg-type]
    assert result["state"] == "SUCCEEDED" and result["app_handle"] == handle
    logged = caplog.text + capsys.readouterr().out  # Airflow's structlog may print instead
    assert "waits for it in the worker" in logged
    assert "[sh/0] from-the-replica" in logged  # the worker streamed the replica's log
