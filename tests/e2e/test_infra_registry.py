"""scripts/infra/registry.sh: a private registry starts idempotently on 127.0.0.1 and stops clean.

Runs its own instance (another port, its own run and cache dirs), never the shared one.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest
from _infra import in_ci
from _support import pid_alive

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "infra" / "registry.sh"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _script(cmd: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), cmd], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )


def test_registry_start_is_idempotent_and_stop_leaves_no_process(tmp_path: Path) -> None:
    if shutil.which("docker-registry") is None:
        why = "Debian's docker-registry is not installed (scripts/infra/registry.sh installs it as root)"
        if in_ci():
            pytest.fail(why)
        pytest.skip(why)
    port = _free_port()
    env = {
        "TORCHX_FLOW_REGISTRY_PORT": str(port),
        "TORCHX_FLOW_CACHE": str(tmp_path / "cache"),
        "TORCHX_FLOW_RUN": str(tmp_path / "run"),
    }
    assert _script("env", env).returncode != 0
    first = _script("start", env)
    try:
        assert first.returncode == 0, first.stderr
        assert first.stdout.strip() == f"TORCHX_FLOW_REGISTRY=127.0.0.1:{port}"
        pid = int((tmp_path / "run" / "registry" / "registry.pid").read_text())
        assert pid_alive(pid)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=5) as resp:
            assert resp.status == 200
        again = _script("start", env)
        assert again.stdout == first.stdout
        assert int((tmp_path / "run" / "registry" / "registry.pid").read_text()) == pid
        assert _script("env", env).stdout == first.stdout
        assert (tmp_path / "cache" / "registry").is_dir()
    finally:
        stopped = _script("stop", env)
    assert stopped.returncode == 0, stopped.stderr
    assert not pid_alive(pid)
    assert not (tmp_path / "run" / "registry" / "registry.pid").exists()
    assert _script("env", env).returncode != 0
