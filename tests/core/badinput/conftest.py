"""Fixtures of the bad-input suite (the checks live in tests/_badinput.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from _badinput import BadInput


@pytest.fixture
def bad(tmp_path: Path) -> BadInput:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    return BadInput(cwd=cwd, home=Path(os.environ["TORCHX_HOME"]))


@pytest.fixture
def write(bad: BadInput) -> Callable[[str, str], Path]:
    def _write(name: str, text: str) -> Path:
        path = bad.cwd / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    return _write
