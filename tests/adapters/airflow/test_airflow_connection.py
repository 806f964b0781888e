"""Everything a worker needs comes from the ``torchx`` connection: named resources, kubeconfig.

Real Airflow runs (dag.test() in a child process) whose only configuration is the
``AIRFLOW_CONN_TORCHX_DEFAULT`` connection: no ``.torchxconfig`` file, no ``KUBECONFIG``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import time
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


def run_dag(
    tmp_path: Path, factory: pytest.TempPathFactory, body: str, extra: dict[str, Any], **env: str
) -> tuple[dict[str, Any], str]:
    connection = {"conn_type": "torchx", "extra": extra}
    full = airflow_home_env(
        tmp_path, factory, AIRFLOW_CONN_TORCHX_DEFAULT=json.dumps(connection), **env
    )
    full.pop("KUBECONFIG", None)  # the connection alone says where the cluster is
    dag_file = write_dag(full, body, "conn_dag.py")
    proc = subprocess.run(
        dag_argv(dag_file, "conn"), env=full, capture_output=True, text=True, timeout=300
    )
    output = proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), output


def test_named_resources_of_the_connection_are_honoured(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    body = """
    with DAG("conn", schedule=None, start_date=datetime(2024, 1, 1)):
        TorchXOperator(task_id="sized", component="utils.echo", resource="team.box")
        TorchXOperator(task_id="unknown", component="utils.echo", resource="team.boxx")
    """
    text = "[named_resources]\nteam.box = cpu=1,memMB=256\n"
    summary, output = run_dag(tmp_path, tmp_path_factory, body, {"torchxconfig": text})
    assert summary["tasks"]["sized"]["state"] == "success", output[-3000:]
    assert summary["tasks"]["unknown"]["state"] == "failed"
    assert "No named resource found for `team.boxx`. Did you mean `team.box`?" in output


@pytest.mark.k8s
def test_the_kubeconfig_of_the_connection_reaches_the_cluster(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from _k8s_live import api_client, namespace

    kubeconfig = Path(os.environ["KUBECONFIG"]).read_text()
    body = """
    with DAG("conn", schedule=None, start_date=datetime(2024, 1, 1)):
        TorchXOperator(
            task_id="hello",
            component="utils.echo",
            component_args={"msg": "hello from the cluster", "image": "torchx-flow/python:3.11"},
            scheduler="kubernetes",
        )
    """
    with namespace(api_client()) as ns:
        extra = {
            "kubeconfig_secret": kubeconfig,
            "scheduler_cfg": {"namespace": ns, "mode": "plain"},
            "ui_url": "https://dash.example/{scheduler}/{namespace}/{name}",
        }
        home = tmp_path / "home"  # no ~/.kube/config either
        home.mkdir()
        summary, output = run_dag(tmp_path, tmp_path_factory, body, extra, HOME=str(home))
        task = summary["tasks"]["hello"]
        assert task["state"] == "success", output[-3000:]
        assert task["xcom"]["return_value"]["app_handle"].startswith(f"kubernetes://torchx/{ns}:")
        assert "[echo/0] hello from the cluster" in output
        # the extra link: the connection's ui_url template, filled for the app
        name = task["xcom"]["return_value"]["app_id"].partition(":")[2]
        link = f"https://dash.example/kubernetes/{ns}/{name}"
        assert task["xcom"]["_link_TorchXAppLink"] == link


def test_connection_kube_extras_are_checked() -> None:
    from torchx_airflow._settings import TorchXSettings

    s = TorchXSettings.from_extras(
        {"kubeconfig_path": "/etc/kube", "kube_context": "prod", "in_cluster": "false"}, "c"
    )
    assert s.kube == {"kubeconfig": "/etc/kube", "kube_context": "prod", "in_cluster": False}
    s = TorchXSettings.from_extras({"kubeconfig": {"apiVersion": "v1"}}, "c")
    assert json.loads(s.kube["kubeconfig_text"]) == {"apiVersion": "v1"}
    with pytest.raises(ValueError, match="set one of `kubeconfig` \\(the text\\) or"):
        TorchXSettings.from_extras({"kubeconfig": "x", "kubeconfig_path": "/y"}, "c")
    assert s.override(scheduler="kubernetes").kube == s.kube


@pytest.mark.k8s
def test_startup_timeout_fails_the_task_with_the_reason_and_cancels_the_app(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from _k8s_live import api_client, leftovers, namespace

    kubeconfig = Path(os.environ["KUBECONFIG"]).read_text()
    body = """
    with DAG("conn", schedule=None, start_date=datetime(2024, 1, 1)):
        TorchXOperator(
            task_id="stuck",
            component="utils.echo",
            component_args={"msg": "never", "image": "torchx-flow/no-such-image:latest"},
            scheduler="kubernetes",
            startup_timeout=30,  # the pull error: 2-5 s after submission idle, 28 s at load 30+
        )
    """
    client = api_client()
    with namespace(client) as ns:
        extra = {"kubeconfig": kubeconfig, "scheduler_cfg": {"namespace": ns, "mode": "plain"}}
        summary, output = run_dag(tmp_path, tmp_path_factory, body, extra)
        task = summary["tasks"]["stuck"]
        assert task["state"] == "failed", output[-3000:]
        assert "ImagePull" in output or "ErrImage" in output, output[-3000:]
        # each new PENDING reason is logged while the worker waits
        pending = [x for x in output.splitlines() if " is PENDING: " in x]
        assert any("ImagePull" in x or "ErrImage" in x for x in pending), output[-3000:]
        assert task["xcom"]["state"] == "CANCELLED"
        app_name = task["xcom"]["app_id"].partition(":")[2]
        deadline = time.monotonic() + 180  # the cancelled app's pod goes (a busy node: slower)
        while leftovers(client, ns, app_name).get("pods") and time.monotonic() < deadline:
            time.sleep(1)
        assert not leftovers(client, ns, app_name).get("pods")
