"""The example training DAG runs end to end for real: dag.test() on SQLite, local_cwd apps."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from _support import run_training_dag

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
    workdir = tmp_path / "work"
    summary, output = run_training_dag(
        tmp_path / "airflow",
        tmp_path_factory.getbasetemp() / "airflow-template",
        {"workdir": str(workdir), "steps": 20},
    )
    assert summary["state"] == "success", output[-3000:]
    train = summary["tasks"]["train"]["xcom"]["return_value"]
    assert train["state"] == "SUCCEEDED"
    checkpoint = workdir / "out" / train["app_id"] / "model.pt"
    assert checkpoint.is_file()
    assert f"checkpoint saved to {checkpoint}" in output
    assert f"evaluated {checkpoint} (trained 20 steps): mse" in output
    assert (workdir / "data" / "dataset.json").is_file()
