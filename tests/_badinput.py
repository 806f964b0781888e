"""Checks of the bad-input suite (tests/core/badinput): one error line, exit 1, nothing left."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from _support import run_torchx


@dataclass
class BadInput:
    """Runs ``torchx`` in an empty directory and checks how it rejected the input."""

    cwd: Path
    home: Path

    def run(self, *args: str, stdin: str = "", env: dict[str, str] | None = None) -> str:
        """Runs the command; asserts exit 1, no traceback, exactly one error line; returns it."""
        proc = run_torchx(*args, stdin=stdin, env=env, cwd=self.cwd, timeout=90)
        return self.check(proc)

    def check(self, proc: subprocess.CompletedProcess[str], code: int = 1) -> str:
        assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
        errors = [line for line in proc.stderr.splitlines() if _is_error_line(line)]
        assert len(errors) == 1, proc.stderr
        self.assert_nothing_left()
        return errors[0]

    def apps(self) -> list[dict[str, object]]:
        """The final states of the local apps started under this test's TORCHX_HOME."""
        states = []
        for state_file in sorted(self.home.glob("local/*/*/state.json")):
            states.append(json.loads(state_file.read_text()))
        return states

    def assert_nothing_left(self) -> None:
        """No process of this test's apps runs, and every app that was started has ended."""
        assert _processes_mentioning(str(self.home)) == []
        for state in self.apps():
            assert state["state"] in ("SUCCEEDED", "FAILED", "CANCELLED"), state


def _is_error_line(line: str) -> bool:
    """``torchx: error: ...`` (error handler, argparse) or a logged ``ERROR`` record."""
    return line.startswith("torchx") and (": error: " in line or " ERROR " in line)


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if text in cmdline and stat.rsplit(")", 1)[1].split()[0] != "Z":
            found.append(int(entry))
    return found
