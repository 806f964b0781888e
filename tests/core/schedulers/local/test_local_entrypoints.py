"""Replica entrypoints: PATH first, then next to the interpreter running torchx; else a clear error."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from _support import TORCHX, run_torchx

from torchx.schedulers._local._replica import resolve_command

VENV_BIN = str(Path(sys.executable).parent)


def test_command_on_path_is_left_alone(tmp_path: Path) -> None:
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert resolve_command(["tool", "-x"], {"PATH": str(tmp_path)}) == ["tool", "-x"]
    assert resolve_command(["/abs/tool"], {"PATH": ""}) == ["/abs/tool"]


def test_command_next_to_the_interpreter_is_found_without_activation() -> None:
    name = "torchx"  # a console script of this venv
    assert os.path.isfile(os.path.join(VENV_BIN, name))
    resolved = resolve_command([name, "--version"], {"PATH": "/usr/bin:/bin"})
    assert resolved == [os.path.join(VENV_BIN, name), "--version"]


def test_command_found_nowhere_is_left_for_the_error() -> None:
    assert resolve_command(["no-such-tool-xyz"], {"PATH": "/usr/bin"}) == ["no-such-tool-xyz"]


def test_cli_runs_a_venv_entrypoint_with_the_venv_not_on_path(tmp_path: Path) -> None:
    # like `.venv/bin/airflow dags test` without activating the venv
    args = ("run", "-s", "local_cwd", "utils.binary", "--entrypoint", "torchx", "--", "--version")
    proc = run_torchx(*args, env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "binary/0 torchx-" in proc.stderr
    assert TORCHX.startswith(VENV_BIN)
