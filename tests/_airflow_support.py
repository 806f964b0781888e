"""Helpers shared by the tests that run a real Airflow (dag.test() in a child process).

Each run gets its own AIRFLOW_HOME (``torchx_airflow.local.prepare_home``, copied from a
migrated template cached for the session); DAG files are written into its DAGs folder.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

LOGICAL_DATE = "2025-01-01T00:00:00+00:00"
HEADER = """
from datetime import datetime, timedelta
from airflow.sdk import DAG
from torchx_airflow import TorchXOperator
"""


def airflow_home_env(
    tmp_path: Path, factory: pytest.TempPathFactory, **extra: str
) -> dict[str, str]:
    """The environment of a run: ours, an isolated AIRFLOW_HOME, this venv first on PATH.

    Args:
        tmp_path: the test's folder (the home is ``tmp_path/airflow``).
        factory: the session's temp path factory (where the migrated template is cached).
        extra: variables set last.
    """
    from torchx_airflow.local import prepare_home

    env = prepare_home(tmp_path / "airflow", template=factory.getbasetemp() / "airflow-template")
    bindir = os.path.dirname(sys.executable)
    return {**os.environ, **env, "PATH": f"{bindir}:{os.environ.get('PATH', '')}", **extra}


def write_dag(env: dict[str, str], body: str, name: str = "test_dag.py") -> Path:
    """Writes ``HEADER`` and the dedented ``body`` as a DAG file of the home; returns its path."""
    path = Path(env["AIRFLOW__CORE__DAGS_FOLDER"]) / name
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def dag_argv(dag_file: Path, dag_id: str, retry_task: str = "") -> list[str]:
    """The command of a dag.test() run, or of the next try of ``retry_task`` of that run."""
    from torchx_airflow.local import dag_test_argv

    cmd = dag_test_argv(dag_file, dag_id, logical_date=LOGICAL_DATE)
    if retry_task:  # the next try of a task of the existing run (a retry, or a clear)
        cmd[3:6] = ["retry", str(dag_file), dag_id, retry_task]
    return cmd


def run_logged(env: dict[str, str], cmd: list[str], log: Path) -> tuple[dict[str, Any], str]:
    """Runs ``cmd`` with its output in ``log``; returns the JSON summary line and the output."""
    with log.open("w") as out:
        proc = subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=300)
    output = log.read_text()
    assert proc.returncode == 0, output[-3000:]
    return json.loads(output.strip().splitlines()[-1]), output


def wait_for(predicate: Callable[[], Any], timeout: float = 120) -> Any:
    """The first true value of ``predicate()``, polled every 0.1 s; fails after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def kill_9_when(cmd: list[str], env: dict[str, str], log: Path, ready: Callable[[], Any]) -> None:
    """Starts the task, SIGKILLs it once ``ready()`` (its app left running), waits for it.

    Fails with the task's output if the task ends before ``ready()``, or after 120 s.
    """
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not ready():
            assert time.monotonic() < deadline, "the app never appeared"
            assert proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()


def running_apps(apps: list[Any]) -> list[Any]:
    """The apps of ``apps`` (``find_apps`` results) whose replicas run.

    The kill -9 re-attach tests kill a try once its app runs, not once it exists: a kill
    between a container's creation and its start leaves a half-created app, which the retry
    rightly replaces instead of re-attaching (test_docker_half_created.py); under load that
    window is seconds wide.
    """
    return [a for a in apps if a.state.name == "RUNNING"]


def state_store(env: dict[str, str]) -> sqlite3.Connection:
    """The run's SQLite database, which holds Airflow's task state store."""
    return sqlite3.connect(Path(env["AIRFLOW_HOME"]) / "airflow.db")


def import_airflow_isolated(home: Path, *modules: str) -> None:
    """Imports ``modules`` (Airflow with them) with an isolated ``AIRFLOW_HOME`` at ``home``,
    then undoes Airflow's root-logger changes (the module fixtures of the unit tests use it).
    """
    import importlib
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW_HOME", str(home))
        mp.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
        for module in modules:
            importlib.import_module(module)
    root.handlers[:], root.level = handlers, level
