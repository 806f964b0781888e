"""Test-wide isolation: every test gets its own TORCHX_HOME and no .torchxconfig files."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
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


def write_entry_points(
    root: Path, groups: dict[str, dict[str, str]], name: str = "fake_plugin"
) -> Path:
    """Writes a minimal installed distribution (``*.dist-info``) declaring entry points under ``root``.

    Put ``root`` on ``sys.path`` (or ``PYTHONPATH`` for a subprocess) and ``importlib.metadata`` finds
    the entry points for real.
    """
    dist = root / f"{name}-0.0.1.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
    lines = []
    for group, entries in groups.items():
        lines.append(f"[{group}]")
        lines.extend(f"{k} = {v}" for k, v in entries.items())
        lines.append("")
    (dist / "entry_points.txt").write_text("\n".join(lines))
    return root


@pytest.fixture
def entry_points_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tmp dir on ``sys.path`` for fake distributions and plugin modules (see write_entry_points)."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    return root


@pytest.fixture
def make_dist() -> Callable[..., Path]:
    """The ``write_entry_points`` helper as a fixture (test modules cannot import conftest)."""
    return write_entry_points
