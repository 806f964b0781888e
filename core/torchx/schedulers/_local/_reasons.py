"""Why a local replica ended, in one line (shown per replica by ``torchx status``; stdlib)."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # stdlib-only and fast to start: typing is imported for checkers only
if TYPE_CHECKING:
    from typing import Any

__all__ = ["exit_reason", "start_error", "stopped_reason"]


def start_error(spec: dict[str, Any], error: BaseException) -> str:
    """One line saying why the replica's process could not start."""
    cmd = spec["args"][0] if spec["args"] else ""
    cwd = spec.get("cwd")
    if isinstance(error, FileNotFoundError) and cwd and error.filename == cwd:
        return f"working directory not found: {cwd}"
    if isinstance(error, FileNotFoundError) and "/" in cmd:
        return f"command not found: {cmd} (no such file)"
    if isinstance(error, FileNotFoundError):
        return f"command not found: {cmd} (not on the replica's PATH, nor next to {sys.executable})"
    if isinstance(error, PermissionError):
        return f"permission denied: {cmd} (is it executable?)"
    return f"could not start {cmd}: {error}"


def _signal_name(code: int) -> str:
    import signal  # lazy: enums, ~3 ms of a supervisor start: a killed replica only

    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def exit_reason(code: int) -> str:
    """Why a replica failed, from its exit code (shell conventions for 126 and 127)."""
    if code < 0:
        return f"killed by {_signal_name(code)}"
    if code == 127:
        return "exited with code 127: a command was not found (see the replica's stderr)"
    if code == 126:
        return "exited with code 126: a command could not be executed (see its stderr)"
    return f"exited with code {code}"


def stopped_reason(code: int | None, why: str, started: bool = True) -> str:
    """What stopped a replica: the app-level reason, and how the replica ended.

    Args:
        code: the replica's exit code (None: its end was not observed).
        why: the app-level reason (e.g. ``cancelled by process 12``).
        started: whether the replica's process was ever started.
    """
    if not started:
        how = "not started"
    elif code is None:
        how = "stopped"
    else:
        how = f"stopped {_exit_how(code)}"
    return f"{how}: {why}" if why else how


def _exit_how(code: int) -> str:
    return f"by {_signal_name(code)}" if code < 0 else f"(exit code {code})"
