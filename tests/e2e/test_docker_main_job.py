"""The main job and the utils.* builtins in containers, on local_docker.

The replicas run in ``torchx-flow/python:3.11`` (Debian's Python 3.11) with this venv mounted
read-only at the same path. The venv's ``python`` is a link into the interpreter it was created
from (``sys.base_prefix``, e.g. a pyenv build), so that prefix is mounted read-only too; torch is
then imported from the venv's site-packages and torchx from this checkout (an editable install),
which is mounted as well. The training script reaches the container through an image workspace:
``torchx run`` builds the project directory (the cwd) on top of the role's image.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support import run_torchx

REPO = Path(__file__).resolve().parents[2]
VENV = Path(sys.prefix)
PY_IMAGE = "torchx-flow/python:3.11"
BUSYBOX = "torchx-flow/busybox:latest"


def _ro(path: Path | str) -> str:
    return f"type=bind,src={path},dst={path},readonly"


def _python_mounts() -> list[str]:
    """Mounts that make this venv (and its base interpreter and sources) usable in a container."""
    paths = {Path(sys.base_prefix).resolve(), VENV.resolve(), REPO}
    roots = sorted(paths)
    kept = [p for p in roots if not any(p != q and p.is_relative_to(q) for q in roots)]
    return [_ro(p) for p in kept]


def _container_path() -> str:
    return f"{VENV / 'bin'}:/usr/local/bin:/usr/bin:/bin"


@pytest.fixture
def cleanup_app_images() -> Iterator[list[str]]:
    """Deletes the apps (containers, network) and the workspace images a test made."""
    import docker

    handles: list[str] = []
    yield handles
    client = docker.from_env()
    try:
        for handle in handles:
            app_id = handle.rsplit("/", 1)[-1]
            label = f"torchx.pytorch.org/app-id={app_id}"
            images = {
                c.image.id for c in client.containers.list(all=True, filters={"label": label})
            }
            run_torchx("delete", handle)
            for image in images:
                if not client.images.get(image).tags:  # a workspace build, not a base image
                    client.images.remove(image, force=True)
    finally:
        client.close()


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_ddp_training_in_containers(tmp_path: Path, cleanup_app_images: list[str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(REPO / "examples" / "train.py", project / "train.py")
    out = tmp_path / "out"
    out.mkdir()
    mounts = ",".join([*_python_mounts(), f"type=bind,src={out},dst=/ckpt"])
    proc = run_torchx(
        "run", "-s", "local_docker", "-cfg", "quiet=True",
        "dist.ddp", "-j", "1x2", "--image", PY_IMAGE, "--script", "train.py",
        "--mounts", mounts, "--env", f"PATH={_container_path()}",
        "--", "--steps", "60", "--output-dir", "/ckpt",
        cwd=project, timeout=600,
    )  # fmt: skip
    handle = proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else ""
    if handle:
        cleanup_app_images.append(handle)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert handle.startswith("local_docker://torchx/")
    losses = [float(x) for x in re.findall(r"step\s+\d+\s+loss ([0-9.]+)", proc.stderr)]
    assert len(losses) >= 3, proc.stderr[-4000:]
    assert losses[-1] < losses[0] / 2
    app_id = handle.rsplit("/", 1)[-1]
    ckpt = out / app_id / "model.pt"
    assert ckpt.is_file(), proc.stderr[-4000:]
    assert f"checkpoint saved to /ckpt/{app_id}/model.pt" in proc.stderr


def _run_builtin(args: list[str], cfg: dict[str, Any] | None = None) -> tuple[Any, str, str]:
    from torchx.runner import get_runner

    runner = get_runner()
    try:
        handle = runner.run_component(args[0], args[1:], "local_docker", cfg or {})
        status = runner.wait(handle, wait_interval=1)
        lines = "".join(runner.log_lines(handle, runner.describe(handle).roles[0].name))
        runner.delete(handle)
        return status, lines, handle
    finally:
        runner.close()


@pytest.mark.docker
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["utils.echo", "--image", BUSYBOX, "--msg", "hi there"], "hi there"),
        (["utils.sh", "--image", BUSYBOX, "echo", "$((6*7))"], "$((6*7))"),
        (["utils.touch", "--image", BUSYBOX, "--file", "/tmp/x"], ""),
    ],
)
def test_utils_builtins_in_busybox(args: list[str], expected: str) -> None:
    status, logs, _ = _run_builtin(args)
    assert status is not None and status.state.name == "SUCCEEDED", status
    assert expected in logs


@pytest.mark.docker
def test_utils_python_and_copy_with_the_mounted_venv(tmp_path: Path) -> None:
    src = tmp_path / "src.txt"
    src.write_text("payload")
    data = f"type=bind,src={tmp_path},dst={tmp_path}"
    cfg = {"env": {"PATH": _container_path()}}
    status, logs, _ = _run_builtin(
        ["utils.python", "--image", PY_IMAGE, "--mounts", ",".join([*_python_mounts(), data]),
         "-c", "import sys, torchx; print('py', sys.version_info[:2], torchx.__name__)"],
        cfg,
    )  # fmt: skip
    assert status is not None and status.state.name == "SUCCEEDED", logs
    assert "py (3, 11) torchx" in logs
    dst = tmp_path / "dst.txt"
    status, logs, _ = _run_builtin(
        ["utils.copy", "--image", PY_IMAGE, "--mounts", ",".join([*_python_mounts(), data]),
         "--src", str(src), "--dst", str(dst)],
        cfg,
    )  # fmt: skip
    assert status is not None and status.state.name == "SUCCEEDED", logs
    assert dst.read_text() == "payload"
    assert os.environ.get("DOCKER_HOST")
