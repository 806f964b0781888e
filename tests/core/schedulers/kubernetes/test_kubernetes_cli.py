"""``torchx run -s kubernetes --dryrun`` through the real CLI: output, and one-line errors.

``--workspace ""``: no image workspace, so no Docker engine is needed (with the default, the cwd,
the kubernetes scheduler builds the workspace into an image first, as TorchX does).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from _support import run_torchx

OFFLINE = "queue=default,validate_spec=False"
DRYRUN = ("run", "-s", "kubernetes", "--workspace", "", "--dryrun")


def test_dryrun_prints_the_volcano_job(tmp_path: Path) -> None:
    proc = run_torchx(*DRYRUN, "-cfg", OFFLINE, "utils.echo", "--msg", "hi", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    request = proc.stdout.split("=== SCHEDULER REQUEST ===\n", 1)[1]
    job = yaml.safe_load(request)
    assert job["kind"] == "Job" and job["spec"]["queue"] == "default"
    container = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    assert container["command"] == ["echo", "hi"]


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ("validate_spec=False", "run option `queue` is required in volcano mode"),
        (f"{OFFLINE},mode=kueue", "run option `mode` must be one of volcano, plain"),
        (f"{OFFLINE},tolerations=gpu:NoSchedul", "did you mean `NoSchedule`?"),
        ("queue=default", "no Kubernetes cluster configured"),
    ],
)
def test_bad_input_is_one_line_and_exit_1(tmp_path: Path, cfg: str, message: str) -> None:
    env = {"KUBECONFIG": str(tmp_path / "missing-kubeconfig")}
    proc = run_torchx(*DRYRUN, "-cfg", cfg, "utils.echo", env=env, cwd=tmp_path)
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("torchx: error:")]
    assert len(errors) == 1 and message in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr
