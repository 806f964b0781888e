"""Helpers shared by tests (importable as ``_support``: pytest puts ``tests/`` on ``sys.path``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def write_dist(root: Path, name: str, groups: dict[str, dict[str, str]]) -> Path:
    """Writes a minimal installed distribution (``NAME-0.1.dist-info``) declaring entry points.

    Put ``root`` on ``sys.path`` (or ``PYTHONPATH`` for a subprocess) and ``importlib.metadata``
    finds the entry points for real.

    Args:
        root: the directory that plays site-packages.
        name: the distribution name.
        groups: ``{group: {entry point name: "module:attr"}}``.

    Returns:
        ``root``.
    """
    info = root / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines: list[str] = []
    for group, eps in groups.items():
        lines.append(f"[{group}]")
        lines += [f"{k} = {v}" for k, v in eps.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return root


def write_file(root: Path, rel: str, src: str) -> Path:
    """Writes ``textwrap.dedent(src)`` to ``root/rel``, creating parent directories."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(src))
    return path


TORCHX = str(Path(sys.executable).parent / "torchx")
"""The ``torchx`` console script of the interpreter running the tests."""


def run_torchx(
    *args: str,
    env: dict[str, str] | None = None,
    stdin: str = "",
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Runs the real ``torchx`` command and captures its output.

    Args:
        *args: the command line after ``torchx``.
        env: variables set over the test's environment.
        stdin: text fed to standard input (empty: an immediate EOF).
        cwd: the working directory.
        timeout: seconds before the test fails instead of hanging.
    """
    return subprocess.run(
        [TORCHX, *args],
        capture_output=True,
        text=True,
        input=stdin,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
