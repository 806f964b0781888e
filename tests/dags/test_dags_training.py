"""The example training DAG runs end to end for real: dag.test() on SQLite, local_cwd apps."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("airflow") is None,
        reason="apache-airflow is not installed (pip install -e '.[airflow]')",
    ),
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed"),
    pytest.mark.slow,
]


def test_training_dag_prepares_trains_and_evaluates(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from torchx_airflow._local_airflow import prepare_home

    env = prepare_home(
        tmp_path / "airflow",
        template=tmp_path_factory.getbasetemp() / "airflow-template",
    )
    env = {
        **os.environ,
        **env,
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "PATH": f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}",
    }
    workdir = tmp_path / "work"
    conf = {"workdir": str(workdir), "steps": 20}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchx_airflow._local_airflow",
            "test",
            str(REPO / "dags" / "torchx_training.py"),
            "torchx_training",
            "--conf",
            json.dumps(conf),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=280,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["state"] == "success", output[-3000:]
    train = summary["tasks"]["train"]["xcom"]["return_value"]
    assert train["state"] == "SUCCEEDED"
    checkpoint = workdir / "out" / train["app_id"] / "model.pt"
    assert checkpoint.is_file()
    assert f"checkpoint saved to {checkpoint}" in output
    assert f"evaluated {checkpoint} (trained 20 steps): mse" in output
    assert (workdir / "data" / "dataset.json").is_file()
