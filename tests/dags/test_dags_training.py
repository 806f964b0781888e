"""The example training DAG runs end to end for real: dag.test() on SQLite, local_cwd apps."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest
from _support import TORCHX, run_training_dag

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
    # a work dir per DAG run: <workdir>/<run id, as a path component>
    run_dir = workdir / summary["run_id"].replace(":", "-").replace("+", "-")
    checkpoint = run_dir / "out" / train["app_id"] / "model.pt"
    assert checkpoint.is_file()
    assert f"checkpoint saved to {checkpoint}" in output
    assert f"evaluated {checkpoint} (trained 20 steps): mse" in output
    assert (run_dir / "data" / "dataset.json").is_file()
    # every step recorded to the DAG's tracker (fsspec, <workdir>/tracker), with lineage
    out = subprocess.run(
        [TORCHX, "tracker", "lineage", train["app_handle"], "--json"],
        env={
            **os.environ,
            "TORCHX_TRACKERS": "fsspec",
            "TORCHX_TRACKER_FSSPEC_CONFIG": str(workdir / "tracker"),
        },
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    lineage = json.loads(out.stdout)
    assert summary["tasks"]["prepare_data"]["xcom"]["return_value"]["app_handle"] in out.stdout
    assert str(checkpoint) in out.stdout, lineage
