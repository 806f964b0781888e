"""The ``torchx`` console script ends with ``os._exit``: output, ``atexit`` and exit codes kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """\
import atexit, sys
atexit.register(lambda: print("atexit ran", file=sys.stderr))
from torchx.cli.main import main
sys.exit(main())
"""


def _torchx(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "torchx"  # the console script's name: __main__ is that file
    script.write_text(SCRIPT)
    env = {**os.environ, "TORCHX_HOME": str(tmp_path / "home"), "TORCHXCONFIG": ""}
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )


def test_output_is_flushed_and_atexit_handlers_run(tmp_path: Path) -> None:
    out = _torchx(tmp_path, "--version")
    assert out.returncode == 0
    assert out.stdout.startswith("torchx-")
    assert "atexit ran" in out.stderr


def test_an_error_keeps_its_exit_code_and_message(tmp_path: Path) -> None:
    out = _torchx(tmp_path, "status", "local_cwd://torchx/no-such-app")
    assert out.returncode == 1
    assert "torchx: error:" in out.stderr
    assert "atexit ran" in out.stderr


def test_a_run_exits_with_its_app(tmp_path: Path) -> None:
    ok = _torchx(tmp_path, "run", "-s", "local_cwd", "utils.sh", "echo", "hi")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("local_cwd://")
    assert "sh/0 hi" in ok.stderr
    failed = _torchx(tmp_path, "run", "-s", "local_cwd", "utils.sh", "sh", "-c", "exit 3")
    assert failed.returncode == 1
    assert "exited with code 3" in failed.stderr
