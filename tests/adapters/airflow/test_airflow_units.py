"""Hook, trigger, operator arguments and helpers of torchx_airflow, against real local apps."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _airflow_support import import_airflow_isolated
from _support import write_dist

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("airflow") is None,
    reason="apache-airflow is not installed (pip install -e '.[airflow]')",
)


@pytest.fixture(scope="module", autouse=True)
def _airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Imports Airflow with an isolated AIRFLOW_HOME and undoes its root-logger changes."""
    import_airflow_isolated(
        tmp_path_factory.mktemp("airflow_home"),
        "torchx_airflow.operators.torchx",
        "torchx_airflow.triggers.torchx",
    )
    yield


def run_events(trigger: Any) -> list[dict[str, Any]]:
    async def collect() -> list[dict[str, Any]]:
        return [event.payload async for event in trigger.run()]

    return asyncio.run(collect())


def launch(args: list[str], component: str = "utils.sh") -> str:
    from torchx.runner import get_runner

    return get_runner().run_component(component, args, "local_cwd", cfg={"detach": True})


# ------------------------------------------------------------------ trigger


def test_trigger_serializes_to_primitives_and_round_trips() -> None:
    from torchx_airflow.triggers.torchx import TorchXJobTrigger

    trigger = TorchXJobTrigger(
        "local_cwd://torchx/sh-abc", "my_conn", {"cache_size": 10}, poll_interval=2
    )
    classpath, kwargs = trigger.serialize()
    assert classpath == "torchx_airflow.triggers.torchx.TorchXJobTrigger"
    assert kwargs == {
        "app_handle": "local_cwd://torchx/sh-abc",
        "torchx_conn_id": "my_conn",
        "scheduler_params": {"cache_size": 10},
        "poll_interval": 2.0,
    }
    assert json.loads(json.dumps(kwargs)) == kwargs  # primitives only
    module, _, name = classpath.rpartition(".")
    rebuilt = getattr(importlib.import_module(module), name)(**kwargs)
    assert rebuilt.serialize() == (classpath, kwargs)


def test_trigger_yields_success_then_failed_events() -> None:
    from torchx_airflow.triggers.torchx import TorchXJobTrigger

    ok = launch(["echo", "ok"])
    (event,) = run_events(TorchXJobTrigger(ok, None, poll_interval=0.5))
    assert event["status"] == "success" and event["app_handle"] == ok
    assert event["state"] == "SUCCEEDED" and event["message"] == ""

    bad = launch(["-c", "raise SystemExit('boom in replica')"], component="utils.python")
    (event,) = run_events(TorchXJobTrigger(bad, None, poll_interval=0.5))
    assert event["status"] == "failed" and event["state"] == "FAILED"
    assert event["message"].startswith(f"TorchX app {bad} ended FAILED")


def test_trigger_never_raises_it_yields_an_error_event() -> None:
    from torchx_airflow.triggers.torchx import TorchXJobTrigger

    (event,) = run_events(TorchXJobTrigger("not a handle", None))
    assert event["status"] == "error"
    assert "could not follow TorchX app not a handle" in event["message"]


def test_trigger_on_kill_cancels_the_app() -> None:
    from torchx.runner import get_runner
    from torchx_airflow.triggers.torchx import TorchXJobTrigger

    handle = launch(["sleep", "60"])
    asyncio.run(TorchXJobTrigger(handle, None).on_kill())
    status = get_runner().wait(handle, wait_interval=1)
    assert status is not None and status.state.name == "CANCELLED"


def test_trigger_on_kill_keeps_the_app_with_on_finish_action_keep() -> None:
    import time

    from torchx.runner import get_runner
    from torchx_airflow.triggers.torchx import TorchXJobTrigger

    handle = launch(["sleep", "60"])
    trigger = TorchXJobTrigger(handle, None, on_kill_action="keep")
    assert trigger.serialize()[1]["on_kill_action"] == "keep"
    asyncio.run(trigger.on_kill())
    time.sleep(0.5)
    runner = get_runner()
    status = runner.status(handle)
    assert status is not None and not status.is_terminal()
    runner.cancel(handle)


# ------------------------------------------------------------------ hook and settings


def test_hook_reads_connection_extras_and_arguments_win(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx.runner.launch import LaunchRequest
    from torchx_airflow.hooks.torchx import TorchXHook

    extra = {
        "scheduler": "local_docker",
        "scheduler_cfg": {"log_dir": "/from/conn", "prepend_cwd": True},
        "torchxconfig": "[local_cwd]\nauto_set_cuda_visible_devices = True\n"
        "[component:dist.ddp]\nj = 1x2\n[torchx:tracker]\nfsspec =\n"
        "[tracker:fsspec]\nconfig = /tmp/tracker.txt\n",
    }
    monkeypatch.setenv(
        "AIRFLOW_CONN_TORCHX_TEST", json.dumps({"conn_type": "torchx", "extra": extra})
    )
    hook = TorchXHook("torchx_test", scheduler="local_cwd", scheduler_cfg={"log_dir": "/arg"})
    settings = hook.settings
    assert settings.scheduler == "local_cwd"
    assert settings.scheduler_cfg == {"log_dir": "/arg", "prepend_cwd": True}
    # the core launch path reads the rest from the connection's .torchxconfig text
    request = LaunchRequest(
        component="dist.ddp",
        component_args=["--script", "train.py"],
        scheduler=settings.scheduler,
        cfg=settings.scheduler_cfg,
    )
    info = hook.get_conn().dryrun_request(request)
    assert info._cfg is not None
    assert {k: info._cfg[k] for k in ("log_dir", "prepend_cwd")} == {
        "log_dir": "/arg",
        "prepend_cwd": True,
    }
    assert info._cfg["auto_set_cuda_visible_devices"] is True
    assert info._app is not None
    (role,) = info._app.roles
    assert "--nproc_per_node 2" in role.args[-1]  # [component:dist.ddp] j = 1x2
    assert role.env["TORCHX_TRACKERS"] == "fsspec"
    assert role.env["TORCHX_TRACKER_FSSPEC_CONFIG"] == "/tmp/tracker.txt"


def test_hook_errors_are_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx_airflow.hooks.torchx import TorchXHook
    from torchx_airflow.version_compat import AirflowNotFoundException

    with pytest.raises(AirflowNotFoundException, match="connection `nope` does not exist"):
        _ = TorchXHook("nope").settings
    assert TorchXHook().get_conn().config.scheduler() == "local_cwd"  # default conn is optional
    monkeypatch.setenv(
        "AIRFLOW_CONN_TX", json.dumps({"conn_type": "torchx", "extra": {"schedular": "x"}})
    )
    with pytest.raises(ValueError, match="unknown extra `schedular`: did you mean `scheduler`"):
        _ = TorchXHook("tx").settings


def test_settings_text_sets_the_default_scheduler_and_wins_over_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx_airflow._settings import TorchXSettings

    worker_file = tmp_path / ".torchxconfig"
    worker_file.write_text("[cli:run]\nscheduler = from_file\n[local_cwd]\nlog_dir = /f\n")
    monkeypatch.setenv("TORCHXCONFIG", str(worker_file))
    config = TorchXSettings(torchxconfig="[cli:run]\nscheduler = local_docker\n").config()
    assert config.scheduler() == "local_docker"
    assert config.section("local_cwd") == {"log_dir": "/f"}


def test_failure_message_leads_with_structured_error() -> None:
    from torchx.specs import AppState, AppStatus
    from torchx_airflow._status import failure_message, xcom_result

    error = json.dumps({"message": {"message": "Traceback...\nValueError: bad lr", "errorCode": 1}})
    status = AppStatus(AppState.FAILED, structured_error_msg=error, ui_url="file:///x")
    message = failure_message("local_cwd://torchx/t-1", status)
    assert (
        message.splitlines()[0]
        == "TorchX app local_cwd://torchx/t-1 ended FAILED: ValueError: bad lr"
    )
    assert xcom_result("local_cwd://torchx/t-1", status) == {
        "app_handle": "local_cwd://torchx/t-1",
        "app_id": "t-1",
        "state": "FAILED",
        "ui_url": "file:///x",
        "tracker_run_id": "local_cwd://torchx/t-1",
    }


@pytest.mark.parametrize(
    ("state", "decision"),
    [
        ("RUNNING", "reattach"),
        ("PENDING", "reattach"),
        ("SUCCEEDED", "reuse"),
        ("FAILED", "launch"),
        ("CANCELLED", "launch"),
        (None, "launch"),
    ],
)
def test_decide_what_a_retry_does(state: str | None, decision: str) -> None:
    from torchx.specs import AppState, AppStatus
    from torchx_airflow._reattach import decide

    status = AppStatus(AppState[state]) if state else None
    assert decide(status).value == decision


def test_operator_arguments_are_checked_and_nothing_is_built_at_parse_time() -> None:
    from torchx_airflow.operators.torchx import TorchXOperator

    with pytest.raises(ValueError, match="pass exactly one of `component`"):
        TorchXOperator(task_id="t")
    op = TorchXOperator(task_id="t", component="no.such_component", component_args=["x"])
    assert op.component == "no.such_component"  # resolved only in execute()
    assert set(op.template_fields) >= {
        "component",
        "component_args",
        "scheduler",
        "scheduler_cfg",
        "image",
    }


def test_operator_cleanup_and_host_options_are_checked() -> None:
    from torchx_airflow.operators.torchx import TorchXOperator

    with pytest.raises(ValueError, match="on_finish_action must be one of cancel, keep, delete"):
        TorchXOperator(task_id="t", component="utils.echo", on_finish_action="delete_pod")
    with pytest.raises(ValueError, match="on_other_host must be one of fail, launch"):
        TorchXOperator(task_id="t", component="utils.echo", on_other_host="skip")


def test_the_stored_record_reads_old_and_new_forms_and_keeps_processed_apps() -> None:
    from torchx_airflow._reattach import AppRecord

    old = AppRecord.load("local_cwd://torchx/a-1")  # a bare handle stored before records
    assert old.pending() == "local_cwd://torchx/a-1" and old.host == ""
    record = AppRecord.load({"app_handle": "k://s/a", "host": "h", "processed": ["k://s/a"]})
    assert record.pending() is None  # a try saw it end: never reused
    assert AppRecord.load(None).pending() is None
    assert AppRecord.load(record.dump()).dump() == record.dump()


def test_task_labels_are_the_task_instance_identity() -> None:
    from types import SimpleNamespace

    from torchx.schedulers.labels import labels_metadata
    from torchx_airflow._reattach import task_labels

    ti = SimpleNamespace(dag_id="d", task_id="t", run_id="manual__2025-01-01T00:00:00+00:00")
    labels = task_labels({"ti": ti})
    assert labels == {
        "airflow-dag-id": "d",
        "airflow-task-id": "t",
        "airflow-run-id": "manual__2025-01-01T00:00:00+00:00",
        "airflow-map-index": "-1",
    }
    assert all(labels_metadata(labels).values())  # every value label-safe
    assert task_labels({}) == {}


def test_the_app_link_is_offered_only_for_a_web_ui() -> None:
    from torchx_airflow._manager import AppManager
    from torchx_airflow.links.torchx import TorchXAppLink
    from torchx_airflow.operators.torchx import TorchXOperator

    op = TorchXOperator(task_id="t", component="utils.echo")
    assert [link.name for link in op.operator_extra_links] == ["TorchX app"]  # parse time
    op._manager = mgr = AppManager(op)
    mgr.ui_url = "file:///tmp/logs"  # local_cwd: no web UI, no link
    assert op.operator_extra_links == ()
    mgr.ui_url = "https://dashboard.example/apps/a-1"
    (link,) = op.operator_extra_links
    assert link.get_link(op, ti_key=None) == "https://dashboard.example/apps/a-1"
    assert TorchXAppLink().get_link(TorchXOperator(task_id="u", component="x"), ti_key=None) == ""


# ------------------------------------------------------------------ provider


def test_provider_info_is_valid_and_imports_no_airflow() -> None:
    code = (
        "import sys, json; from torchx_airflow.provider_info import get_provider_info;"
        "print(json.dumps([get_provider_info(), [m for m in sys.modules if m.split('.')[0] == 'airflow']]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    info, airflow_modules = json.loads(out.stdout)
    assert airflow_modules == []
    import jsonschema

    schema = Path(importlib.util.find_spec("airflow").origin).parent / "provider_info.schema.json"
    jsonschema.validate(info, json.loads(schema.read_text()))
    assert info["package-name"] == "torchx-flow"
    assert info["extra-links"] == ["torchx_airflow.links.torchx.TorchXAppLink"]
    (conn,) = info["connection-types"]
    assert conn["connection-type"] == "torchx"
    assert conn["hook-class-name"] == "torchx_airflow.hooks.torchx.TorchXHook"
    assert conn["conn-fields"]["kubeconfig_secret"]["schema"]["format"] == "password"


def test_airflow_providers_list_shows_torchx(tmp_path: Path) -> None:
    site = write_dist(
        tmp_path / "site",
        "torchx_flow",
        {
            "apache_airflow_provider": {
                "provider_info": "torchx_airflow.provider_info:get_provider_info"
            }
        },
    )
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "home"),
        "PYTHONPATH": f"{site}:{os.environ.get('PYTHONPATH', '')}",
    }
    out = subprocess.run(
        [sys.executable, "-m", "airflow", "providers", "list", "-o", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert '"package_name": "torchx-flow"' in out.stdout
    hooks = subprocess.run(
        [sys.executable, "-m", "airflow", "providers", "hooks", "-o", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert "torchx_airflow.hooks.torchx.TorchXHook" in hooks.stdout
    # the connection form (what the UI and API server read): kubeconfig_secret is a masked
    # field, and Airflow's masker hides its value by name
    code = (
        "import json; from airflow.providers_manager import ProvidersManager;"
        "from airflow._shared.secrets_masker import should_hide_value_for_key as hide;"
        "pm = ProvidersManager(); w = pm.connection_form_widgets;"
        "k = 'extra__torchx__kubeconfig_secret';"
        "print(json.dumps([k in w and w[k].is_sensitive, hide(k), hide('kubeconfig_secret'),"
        " pm.field_behaviours.get('torchx', {}).get('hidden_fields')]))"
    )
    form = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert form.returncode == 0, form.stderr[-2000:]
    sensitive, hidden_prefixed, hidden, fields = json.loads(form.stdout.strip().splitlines()[-1])
    assert sensitive and hidden_prefixed and hidden
    assert fields == ["host", "schema", "login", "password", "port"]


def test_dag_from_pipeline_adds_airflow_only_values(tmp_path: Path) -> None:
    import datetime as dt

    from torchx_airflow import dag_from_pipeline

    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        "name: p\n"
        "params:\n  workdir: {default: /tmp/w}\n"
        "steps:\n"
        "  a:\n    component: utils.echo\n    env: {A: '1'}\n"
        "    args: [--msg, '{{ params.workdir }}/a']\n"
        "  b:\n    component: utils.echo\n    depends_on: [a]\n"
    )
    dag = dag_from_pipeline(
        pipeline,
        param_jinja={"workdir": "{{ params.workdir }}/{{ run_id }}"},
        task_kwargs={
            "*": {"env": {"T": "x"}},
            "b": {"retries": 3, "execution_timeout": dt.timedelta(minutes=5)},
        },
    )
    a, b = dag.get_task("a"), dag.get_task("b")
    assert a.component_args == ["--msg", "{{ params.workdir }}/{{ run_id }}/a"]
    assert a.env == {"A": "1", "T": "x"} and b.env == {"T": "x"}
    assert b.retries == 3 and b.execution_timeout == dt.timedelta(minutes=5)
    assert a.retries == 0 and a.execution_timeout is None
