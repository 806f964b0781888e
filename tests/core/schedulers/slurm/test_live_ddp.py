"""``torchx run -s slurm dist.ddp`` trains ``examples/train.py`` on the local Slurm, for real.

``-j 1x2``: one component, torchrun starts two workers on its node. ``-j 2x1``: two components
(one per node when the local Slurm has two), each torchrun reaching rank 0's c10d store at
``$SLURM_JOB_NODELIST_HET_GROUP_0`` (a node name that resolves to 127.0.0.1 here). The replicas run
this venv's ``python``/``torchrun`` from ``PATH``, which ``sbatch`` passes on to the job.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from _support import run_torchx

from torchx.schedulers.slurm_scheduler import create_scheduler
from torchx.specs.api import AppState, is_terminal

pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[4]


def nodes() -> list[str]:
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True)
    return sorted(set(out.stdout.split()))


def wait_ended(app_id: str, timeout: float = 420) -> AppState:
    sched = create_scheduler("test")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        desc = sched.describe(app_id)
        if desc is not None and is_terminal(desc.state):
            return desc.state
        time.sleep(1)
    raise AssertionError(f"slurm job {app_id} did not end in {timeout}s")


def run_ddp(tmp_path: Path, j: str, cfg: str) -> tuple[str, str, Path]:
    out = tmp_path / "out"
    run = run_torchx(
        "run", "-s", "slurm", "-cfg", cfg,
        "dist.ddp", "-j", j, "--cpu", "1", "--memMB", "1024",
        "--script", str(REPO / "examples" / "train.py"),
        "--", "--steps", "20", "--output-dir", str(out),
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[-1]
    app_id = handle.rsplit("/", 1)[-1]
    assert wait_ended(app_id) == AppState.SUCCEEDED, run_torchx("log", handle).stdout
    logs = run_torchx("log", handle).stdout
    return handle, logs, out


@pytest.mark.parametrize("j", ["1x2", "2x1"])
def test_ddp_trains(tmp_path: Path, j: str) -> None:
    pytest.importorskip("torch")
    if j == "2x1" and len(nodes()) < 2:
        pytest.fail(f"the local Slurm has one node ({nodes()}): 2x1 needs two")
    cfg = f"job_dir={tmp_path / 'job'}"
    if j == "2x1":
        cfg += ",exclusive=True"  # a whole node per replica: one replica on each node
    handle, logs, out = run_ddp(tmp_path, j, cfg)
    assert "training on 2 workers, 20 steps" in logs, logs
    assert "worker 1/2 ready" in logs, logs
    # train.py names its checkpoint directory after TORCHX_JOB_ID (the handle's app id)
    assert (out / handle.rsplit("/", 1)[-1] / "model.pt").is_file(), logs
    status = run_torchx("status", handle).stdout
    assert "SUCCEEDED" in status, status
    if j == "2x1":
        hosts = subprocess.run(
            ["sacct", "-X", "-n", "-P", "-o", "NodeList", "-j", handle.rsplit("/", 1)[-1]],
            capture_output=True,
            text=True,
        ).stdout.split()
        assert sorted(set(hosts)) == nodes(), hosts  # one replica per node
