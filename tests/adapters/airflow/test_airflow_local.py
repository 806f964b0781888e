"""``torchx_airflow.local``: the public helpers for running DAGs on an isolated Airflow home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from torchx_airflow import local


def test_importing_the_local_helpers_imports_no_airflow() -> None:
    code = (
        "import sys, json, torchx_airflow, torchx_airflow.local;"
        "print(json.dumps([m for m in sys.modules if m.split('.')[0] == 'airflow']))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_public_names() -> None:
    assert sorted(local.__all__) == [
        "airflow_env",
        "dag_test_argv",
        "prepare_home",
        "retry_task",
        "run_dag_test",
    ]
    assert all(callable(getattr(local, name)) for name in local.__all__)


def test_airflow_env_isolates_the_home_on_sqlite_and_loopback(tmp_path: Path) -> None:
    env = local.airflow_env(tmp_path / "home")
    assert env["AIRFLOW_HOME"] == str(tmp_path / "home")
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(tmp_path / "home" / "dags")
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == f"sqlite:///{tmp_path / 'home'}/airflow.db"
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1"
    assert local.airflow_env(tmp_path, tmp_path / "d")["AIRFLOW__CORE__DAGS_FOLDER"] == str(
        tmp_path / "d"
    )


def test_dag_test_argv_runs_this_module(tmp_path: Path) -> None:
    argv = local.dag_test_argv(tmp_path / "d.py", "d", {"steps": 3}, "2026-01-01T00:00:00+00:00")
    assert argv == [
        sys.executable,
        "-m",
        "torchx_airflow.local",
        "test",
        str(tmp_path / "d.py"),
        "d",
        "--conf",
        '{"steps": 3}',
        "--logical-date",
        "2026-01-01T00:00:00+00:00",
    ]
    assert local.dag_test_argv(tmp_path / "d.py", "d")[3:] == ["test", str(tmp_path / "d.py"), "d"]


_SERVED_VERSIONS = """
import json
import httpx
from torchx_airflow._local_api import serve_newest_version_only
trimmed = serve_newest_version_only()
from airflow.api_fastapi.execution_api.app import InProcessExecutionAPI
from airflow.sdk.api.client import API_VERSION
api = InProcessExecutionAPI()
client = httpx.Client(transport=api.transport, base_url="http://in-process.invalid/")
def health(version):
    return client.get("/health", headers={"Airflow-API-Version": version}).status_code
routers = api.app.router.versioned_routers
print(json.dumps({
    "trimmed": trimmed, "client": API_VERSION, "served": sorted(routers),
    "client_health": health(API_VERSION), "oldest_health": health("2025-04-11"),
    "previous": sorted(r.path for v in routers.values() for r in v.routes if "previous" in r.path),
}))
"""


def test_the_in_process_api_serves_the_sdk_client_its_version_alone(tmp_path: Path) -> None:
    """The trimmed app serves exactly the version the Task SDK's client asks for (if Airflow's
    client ever spoke another one, every local task would fail), with the newest routes."""
    env = {**os.environ, **local.airflow_env(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", _SERVED_VERSIONS], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["trimmed"] is True
    assert got["served"] == [got["client"]]
    assert (got["client_health"], got["oldest_health"]) == (200, 404)
    # the previous-run route moved in 2026-04-06; the old path, which only older versions
    # serve, is gone with them
    assert "/dag-runs/previous" in got["previous"]
    assert "/dag-runs/{dag_id}/previous" not in got["previous"]
