"""The main job (`make run`): examples/train.py, DDP 1x2, via `torchx run -s local_cwd dist.ddp`."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _support import wait_until

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None,
    reason="torch is not installed (pip install 'torchx-flow[examples]')",
)


def test_main_job_trains_and_saves_checkpoint(tmp_path: Path) -> None:
    env = os.environ.copy()
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            str(REPO / "scripts" / "run-main-job.sh"),
            "--steps",
            "60",
            "--output-dir",
            str(out),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    handle = proc.stdout.strip().splitlines()[-1]
    assert handle.startswith("local_cwd://torchx/")
    losses = [float(x) for x in re.findall(r"step\s+\d+\s+loss ([0-9.]+)", proc.stderr)]
    assert len(losses) >= 3, proc.stderr[-4000:]
    assert losses[-1] < losses[0] / 2
    match = re.search(r"checkpoint saved to (\S+)", proc.stderr)
    assert match, proc.stderr[-4000:]
    ckpt = Path(match.group(1))
    assert ckpt.is_file() and ckpt.is_relative_to(out)
    app_id = handle.rsplit("/", 1)[-1]
    assert ckpt.parent.name == app_id


def test_hold_file_keeps_the_workers_waiting_until_it_exists(tmp_path: Path) -> None:
    """``--hold-file``: the workers train, then wait for the file (the Celery fault tests make
    their apps last exactly as long as the fault needs with it), then save and end."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    out, hold, log = tmp_path / "out", tmp_path / "release", tmp_path / "log"
    argv = [str(REPO / "scripts" / "run-main-job.sh"), "--steps", "5", "--output-dir", str(out)]
    with log.open("w") as sink:
        proc = subprocess.Popen(
            [*argv, "--hold-file", str(hold)], cwd=REPO, env=env, stdout=sink, stderr=sink
        )

        def both_held() -> bool:
            assert proc.poll() is None, log.read_text()[-4000:]
            return log.read_text().count("holding until") == 2

        try:
            wait_until(both_held, 120, "both workers to hold", 0.2)
            time.sleep(1)  # held: neither ended nor saved anything
            assert proc.poll() is None and not out.exists(), log.read_text()[-4000:]
            hold.touch()
            assert proc.wait(timeout=120) == 0, log.read_text()[-4000:]
        finally:
            proc.kill()
            proc.wait()
    assert list(out.glob("*/model.pt")), log.read_text()[-4000:]
