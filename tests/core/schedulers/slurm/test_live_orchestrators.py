"""The shared example pipeline on the local Slurm: ``torchx pipeline run`` and the example Airflow
DAG (``dag.test()``), both with the parameter ``scheduler: slurm``.

Every step (prepare, the ``dist.ddp -j 1x2`` train step, evaluate) is one Slurm job that runs in
the launcher's directory (a temporary one here), where the replicas' log files go.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from _support import TORCHX, run_training_dag

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed"),
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.timeout(600),
]

REPO = Path(__file__).resolve().parents[4]


def test_pipeline_run_on_slurm(tmp_path: Path) -> None:
    import subprocess

    work = tmp_path / "work"
    proc = subprocess.run(
        [TORCHX, "pipeline", "run", str(REPO / "pipelines" / "pipeline.yaml"), "--json",
         "-p", "scheduler=slurm", "-p", f"workdir={work}", "-p", "steps=10"],
        capture_output=True, text=True, cwd=tmp_path, timeout=500,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    handles = {e["name"]: e["app_handle"] for e in events if e.get("app_handle")}
    assert set(handles) == {"prepare_data", "train", "evaluate"}, events
    assert all(str(h).startswith("slurm://") for h in handles.values()), handles
    train_id = str(handles["train"]).rsplit("/", 1)[-1]
    assert (work / "out" / train_id / "model.pt").is_file()
    assert (tmp_path / f"slurm-{train_id}-train-0.err").is_file()  # the job ran where torchx did


@pytest.mark.skipif(
    importlib.util.find_spec("airflow") is None,
    reason="apache-airflow is not installed (pip install -e '.[airflow]')",
)
def test_training_dag_on_slurm(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the tasks (and so the jobs and their logs) run here
    workdir = tmp_path / "work"
    summary, output = run_training_dag(
        tmp_path / "airflow",
        tmp_path_factory.getbasetemp() / "airflow-template",
        {"scheduler": "slurm", "workdir": str(workdir), "steps": 20},
        timeout=500,
    )
    assert summary["state"] == "success", output[-4000:]
    train = summary["tasks"]["train"]["xcom"]["return_value"]
    assert train["state"] == "SUCCEEDED"
    assert train["app_handle"].startswith("slurm://")
    run_dir = workdir / summary["run_id"].replace(":", "-").replace("+", "-")  # a dir per run
    checkpoint = run_dir / "out" / train["app_id"] / "model.pt"
    assert checkpoint.is_file()
    assert f"evaluated {checkpoint} (trained 20 steps): mse" in output
