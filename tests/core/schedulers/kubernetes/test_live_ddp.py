"""A 2-pod ``dist.ddp -j 2x1`` run of ``examples/train.py`` trains for real on the local cluster.

Rank 1 reaches rank 0's c10d store at rank 0's pod IP (``rank0_address=pod_ip``: the cluster has
no DNS; in production ``dns`` names rank 0 through the headless Service). The pods run this venv
(``venv_image``, checkout mounted read-only) and write the checkpoint to a host directory.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _k8s_live import (
    api_client,
    docker_env,
    leftovers,
    mounts_arg,
    namespace,
    venv_image,
    wait_until,
)
from _support import run_torchx

from torchx.schedulers.kubernetes_scheduler import create_scheduler
from torchx.specs.api import is_terminal

pytestmark = [pytest.mark.k8s, pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    pytest.importorskip("torch")
    api = api_client()
    yield api
    api.close()


def test_ddp_2x1_trains_across_two_pods(client: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    empty = tmp_path / "empty"  # the cwd: an empty workspace leaves the image as it is
    empty.mkdir()
    with namespace(client, "tx-ddp") as ns, venv_image() as image:
        opts = f"mode=plain,namespace={ns},rank0_address=pod_ip,reserved_millicpu=950"
        run = run_torchx(
            "run", "-s", "kubernetes", "--workspace", "", "-cfg", opts,
            "dist.ddp", "-j", "2x1", "--cpu", "1", "--image", image,
            "--mounts", mounts_arg("type=bind", f"src={out}", f"dst={out}"),
            "--script", str(REPO / "examples" / "train.py"),
            "--", "--steps", "30", "--output-dir", str(out),
            env={"DOCKER_HOST": docker_env()["DOCKER_HOST"]}, cwd=empty,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        handle = run.stdout.strip().splitlines()[-1]
        app_id = handle.rsplit("/", 1)[-1]
        name = app_id.split(":", 1)[1]

        sched = create_scheduler("test", client=client)

        def ended() -> bool:
            desc = sched.describe(app_id)
            time.sleep(1)  # the pods need the machine's CPUs more than this loop
            return desc is not None and is_terminal(desc.state)

        # two pods import torch and run torchrun, then two workers do: minutes on a busy machine
        wait_until("the training to finish", ended, timeout=840)
        status = run_torchx("status", handle).stdout
        logs = run_torchx("log", handle).stdout
        assert "SUCCEEDED" in status, status + logs
        # both pods took part: two nodes, one rank each (world size 2)
        # train.py names its output after TORCHX_JOB_ID: the app's handle
        assert (out / app_id / "model.pt").is_file(), logs
        assert "training on 2 workers, 30 steps" in logs, logs
        assert "worker 1/2 ready" in logs, logs
        assert run_torchx("delete", handle).returncode == 0
        wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))
    assert os.listdir(out) == [f"{ns}:{name}"]
