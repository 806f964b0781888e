"""Secrets stay in Airflow (issue 25): the kubeconfig is masked, replicas inherit no secret.

Real Airflow (dag.test() in a child process) and real ``local_cwd`` replicas.
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import subprocess
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

TOKEN = "kube-token-5f1d0c9a7e"
CLIENT_KEY = "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JSUV2UUlCQURBTkJna3Foa2lHOXcw"
KUBECONFIG = f"""apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {{server: "https://127.0.0.1:1"}}
users:
- name: u
  user:
    token: {TOKEN}
    client-key-data: {CLIENT_KEY}
contexts:
- name: x
  context: {{cluster: c, user: u}}
current-context: x
"""


def run_dag(
    tmp_path: Path, factory: pytest.TempPathFactory, body: str, **env: str
) -> tuple[dict[str, Any], str]:
    full = airflow_home_env(tmp_path, factory, **env)
    dag_file = write_dag(full, body, "secrets_dag.py")
    proc = subprocess.run(
        dag_argv(dag_file, "secrets"), env=full, capture_output=True, text=True, timeout=300
    )
    output = proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), output


@pytest.mark.parametrize("key", ["kubeconfig", "kubeconfig_secret"])
def test_the_connection_kubeconfig_is_masked_in_logs_and_rendered_fields(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, key: str
) -> None:
    # dag.test() prints task logs unmasked (Airflow's masking runs in the task supervisor of a
    # deployment, which gets each mask_secret), so the check is the masker itself: after the
    # hook read the connection, Airflow's redact() hides the kubeconfig, each credential in it
    # on a line of its own, and the rendered template field stored for the UI (a replica env
    # templated from the connection)
    extra = {"scheduler": "local_cwd", key: KUBECONFIG}
    connection = json.dumps({"conn_type": "torchx", "extra": extra})
    body = f"""
    from airflow.sdk import task

    with DAG("secrets", schedule=None, start_date=datetime(2024, 1, 1)):
        templated = TorchXOperator(
            task_id="templated",
            component="utils.echo",
            torchx_conn_id="torchx_k8s",
            env={{"KCFG": "{{{{ conn.torchx_k8s.extra_dejson['{key}'] }}}}"}},
        )

        @task
        def masked() -> None:
            from airflow.sdk._shared.secrets_masker import redact
            from torchx_airflow import TorchXHook

            TorchXHook("torchx_k8s").settings
            for line in ("token: {TOKEN}", "key {CLIENT_KEY}", {KUBECONFIG!r}):
                print("REDACTED:", repr(redact(line)))

        templated >> masked()  # the operator's own read masks its field, not this task's
    """
    summary, output = run_dag(tmp_path, tmp_path_factory, body, AIRFLOW_CONN_TORCHX_K8S=connection)
    assert summary["state"] == "success", output[-3000:]
    redacted = [line for line in output.splitlines() if line.startswith("REDACTED:")]
    assert len(redacted) == 3, output[-3000:]
    assert TOKEN not in "\n".join(redacted) and CLIENT_KEY not in "\n".join(redacted)
    assert "***" in redacted[0]
    home = tmp_path / "airflow"
    with sqlite3.connect(home / "airflow.db") as db:
        rows = db.execute("SELECT rendered_fields FROM rendered_task_instance_fields").fetchall()
    rendered = "\n".join(str(r[0]) for r in rows)
    assert "KCFG" in rendered, rendered
    # kubeconfig_secret is masked by its name; the plain `kubeconfig` extra because the
    # operator reads its connection (the hook masks it) before it renders its fields
    assert TOKEN not in rendered and CLIENT_KEY not in rendered


def test_replicas_inherit_neither_airflow_secrets_nor_celery_urls(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    secrets = {
        "AIRFLOW__CELERY__BROKER_URL": "redis://:broker-pass-77@redis:6379/0",
        "AIRFLOW__CELERY__RESULT_BACKEND": "db+postgresql://u:result-pass-77@pg/airflow",
        "AIRFLOW__CELERY__BROKER_URL_CMD": "cat /run/broker-pass-77",
        "AIRFLOW__SECRETS__BACKEND_KWARGS": '{"token": "vault-pass-77"}',
        "AIRFLOW__SENTRY__SENTRY_DSN": "https://dsn-pass-77@sentry/1",
        "AIRFLOW_CONN_OTHER": "postgres://u:conn-pass-77@h/db",
        "_AIRFLOW_WWW_USER_PASSWORD": "www-pass-77",
    }
    body = """
    with DAG("secrets", schedule=None, start_date=datetime(2024, 1, 1)):
        TorchXOperator(task_id="env", component="utils.sh", component_args=["env"])
    """
    summary, output = run_dag(tmp_path, tmp_path_factory, body, **secrets)
    assert summary["tasks"]["env"]["state"] == "success", output[-3000:]
    replica = [line for line in output.splitlines() if "[sh/0]" in line]
    assert any("PATH=" in line for line in replica), output[-3000:]  # it did print its env
    for name in secrets:
        assert not any(f"{name}=" in line for line in replica), name
    assert "pass-77" not in "\n".join(replica)
