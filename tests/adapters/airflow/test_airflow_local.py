"""``torchx_airflow.local``: the public helpers for running DAGs on an isolated Airflow home."""

from __future__ import annotations

import json
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
