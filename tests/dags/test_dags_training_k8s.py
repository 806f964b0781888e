"""The example training DAG on the current local Kubernetes cluster (1.35): triggered with
``{"scheduler": "kubernetes"}``, every step (prepare, the DDP train step, evaluate) runs as pods.

What the run relies on (besides ``tests/_k8s_live.py``): the ``torchx_default`` connection (an
``AIRFLOW_CONN_*`` variable) carries a ``.torchxconfig`` whose ``[kubernetes]`` section selects
plain mode in a fresh namespace (rank 0 by its DNS name, the default), and whose
``[component:...]`` sections give the components an image with this venv on ``PATH`` (loaded
into the cluster's containerd) and the mounts (checkout read-only, the work directory read-write
at its host path, where the steps exchange data and the checkpoint).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _k8s_current import loaded_venv_image
from _k8s_live import api_client, mounts_arg, namespace
from _support import run_training_dag

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("airflow") is None,
        reason="apache-airflow is not installed (pip install -e '.[airflow]')",
    ),
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed"),
    pytest.mark.k8s,
    pytest.mark.slow,
]


@pytest.fixture
def client() -> Iterator[Any]:
    api = api_client()
    yield api
    api.close()


def torchxconfig(ns: str, image: str, workdir: Path) -> str:
    mounts = mounts_arg("type=bind", f"src={workdir}", f"dst={workdir}")
    # a 2-CPU node: requests are kept small by reserving (nearly) all of each role's CPU
    return f"""
[kubernetes]
mode = plain
namespace = {ns}
reserved_millicpu = 950

[component:utils.python]
image = {image}
mounts = {mounts}

[component:dist.ddp]
image = {image}
mounts = {mounts}
"""


def test_training_dag_runs_its_steps_as_pods(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, client: Any
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    with namespace(client, "tx-dag") as ns, loaded_venv_image() as image:
        connection = {
            "conn_type": "torchx",
            "extra": {"torchxconfig": torchxconfig(ns, image, workdir)},
        }
        summary, output = run_training_dag(
            tmp_path / "airflow",
            tmp_path_factory.getbasetemp() / "airflow-template",
            {"scheduler": "kubernetes", "workdir": str(workdir), "steps": 20},
            extra_env={"AIRFLOW_CONN_TORCHX_DEFAULT": json.dumps(connection)},
            timeout=600,
        )
        assert summary["state"] == "success", output[-4000:]
        train = summary["tasks"]["train"]["xcom"]["return_value"]
        assert train["state"] == "SUCCEEDED"
        assert train["app_handle"].startswith(f"kubernetes://torchx/{ns}:")
        # the train pods' TORCHX_JOB_ID is the app's handle, so the checkpoint directory is named
        # after the same app id the evaluate step reads from the XCom
        run_dir = workdir / summary["run_id"].replace(":", "-").replace("+", "-")
        checkpoint = run_dir / "out" / train["app_id"] / "model.pt"
        assert checkpoint.is_file()
        # the train step's pod log was copied into the task log
        assert f"checkpoint saved to {checkpoint}" in output
        assert f"evaluated {checkpoint} (trained 20 steps): mse" in output
