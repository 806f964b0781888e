"""Test-wide isolation: every test gets its own TORCHX_HOME and no .torchxconfig files."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolate_torchx_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    home = tmp_path / "torchx_home"
    monkeypatch.setenv("TORCHX_HOME", str(home))
    monkeypatch.setenv("TORCHXCONFIG", "")
    # replicas run `python`, `torchrun`, `torchx` from PATH: make them this venv's, however pytest
    # was started
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", os.pathsep.join([bin_dir, os.environ.get("PATH", "")]))
    for var in ("TORCHX_TRACKERS", "TORCHX_PARENT_RUN_ID", "TORCHX_JOB_ID"):
        monkeypatch.delenv(var, raising=False)
    yield
