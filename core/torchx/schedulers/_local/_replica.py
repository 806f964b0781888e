"""One replica as seen by the supervisor: its process group, pipes and log files (stdlib only)."""

from __future__ import annotations

import errno
import os
import sys
import time

from torchx.schedulers._local._reasons import start_error
from torchx.schedulers._local._spawn import Poller, find_executable, spawn

TYPE_CHECKING = False  # stdlib-only and fast to start: typing is imported for checkers only
if TYPE_CHECKING:
    import signal as _signal
    from typing import Any
else:  # the C module: the signal module's enums cost a few ms to import
    import _signal

__all__ = ["Replica"]

_CHUNK = 65536
_LOG_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND


class Replica:
    """A replica of a role: spawns its process in a new process group, copies its output to logs.

    Args:
        role: the role name.
        idx: the replica index within the role.
        spec: ``{"args", "env", "cwd", "stdout", "stderr", "combined"}`` from ``request.json``.
    """

    def __init__(self, role: str, idx: int, spec: dict[str, Any]) -> None:
        self.role = role
        self.idx = idx
        self.spec = spec
        self.state = "PENDING"
        self.pid: int | None = None
        self.pgid: int | None = None
        self.exit_code: int | None = None
        self.restarts = 0
        self.stopping = False
        self.restart_pending = False
        self.kill_at: float | None = None
        self.started = False  # whether a process was ever started
        self.last_pid: int | None = None
        self._poller: Poller | None = None
        self._logs: dict[str, int] = {}
        self._pipes: dict[int, str] = {}
        self._partial: dict[str, bytes] = {}

    # -- process lifecycle -------------------------------------------------------------------

    def spawn(self, poller: Poller) -> OSError | None:
        """Start the replica's process in its own process group; return the error if exec failed."""
        self._poller = poller
        self._open_logs()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            pid = spawn(
                resolve_command(self.spec["args"], self.spec["env"]),
                self.spec["env"],
                self.spec.get("cwd") or None,
                out_w,
                err_w,
            )
        except (OSError, ValueError) as e:  # ValueError: a NUL byte in an argument or the env
            os.close(out_r)
            os.close(err_r)
            error = e if isinstance(e, OSError) else OSError(errno.EINVAL, str(e))
            self._write("stderr", f"torchx: {start_error(self.spec, error)}\n".encode())
            return error
        finally:
            os.close(out_w)
            os.close(err_w)
        self.pid = self.pgid = self.last_pid = pid
        self.started = True
        self.state, self.exit_code, self.stopping, self.kill_at = "RUNNING", None, False, None
        for fd, stream in ((out_r, "stdout"), (err_r, "stderr")):
            os.set_blocking(fd, False)
            self._pipes[fd] = stream
            poller.register(fd, self._read, fd)
        return None

    def reaped(self, code: int) -> None:
        """Record that the leader process exited with ``code`` (negative: killed by a signal)."""
        self.pid = None
        self.exit_code = code
        self.drain()

    def busy(self) -> bool:
        """Return whether the leader runs or anything is left in its process group."""
        return self.pid is not None or self.group_alive()

    def group_alive(self) -> bool:
        """Return whether any process is left in the replica's process group."""
        if self.pgid is None:
            return False
        try:
            os.killpg(self.pgid, 0)
        except (ProcessLookupError, PermissionError):
            self.pgid = None
            return False
        return True

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the whole process group (no-op once the group is gone)."""
        if self.pgid is not None:
            try:
                os.killpg(self.pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def terminate(self, grace: float) -> None:
        """SIGTERM the process group now and schedule a SIGKILL after ``grace`` seconds."""
        if self.busy():
            self.stopping = self.pid is not None or self.stopping
            self.signal_group(_signal.SIGTERM)
            self.kill_at = time.monotonic() + grace

    def kill_if_due(self, now: float) -> None:
        """SIGKILL the group if its grace period has run out."""
        if self.kill_at is not None and now >= self.kill_at:
            self.signal_group(_signal.SIGKILL)
            self.kill_at = now + 0.5 if self.group_alive() else None

    # -- output ------------------------------------------------------------------------------

    def _open_logs(self) -> None:
        for stream in ("stdout", "stderr", "combined"):
            if stream not in self._logs:
                self._logs[stream] = os.open(self.spec[stream], _LOG_FLAGS, 0o644)

    def _read(self, fd: int) -> bool:
        """Copy what is available on ``fd`` to the logs; True once the pipe reached EOF."""
        stream = self._pipes[fd]
        while True:
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:
                return False
            if not chunk:
                self._close_pipe(fd)
                return True
            self._write(stream, chunk)

    def drain(self) -> None:
        """Read everything already buffered in the pipes (the leader has exited)."""
        for fd in list(self._pipes):
            self._read(fd)
        for stream in ("stdout", "stderr"):
            self._flush_partial(stream)

    def close(self) -> None:
        """Copy what is left in the pipes (all writers are dead), then close pipes and logs."""
        for fd in list(self._pipes):
            if not self._read(fd):
                self._close_pipe(fd)
        self._flush_partial("stdout")
        self._flush_partial("stderr")
        for fd in self._logs.values():
            os.close(fd)
        self._logs.clear()

    def _close_pipe(self, fd: int) -> None:
        stream = self._pipes.pop(fd)
        if self._poller is not None:
            self._poller.unregister(fd)
        os.close(fd)
        self._flush_partial(stream)

    def _write(self, stream: str, chunk: bytes) -> None:
        """Write to the stream's log at once and whole lines to the combined log."""
        self._open_logs()
        _write_all(self._logs[stream], chunk)
        pending = self._partial.get(stream, b"") + chunk
        cut = pending.rfind(b"\n") + 1
        if cut:
            _write_all(self._logs["combined"], pending[:cut])
        self._partial[stream] = pending[cut:]

    def _flush_partial(self, stream: str) -> None:
        """End an unterminated last line in the combined log (so streams never share a line)."""
        rest = self._partial.pop(stream, b"")
        if rest and "combined" in self._logs:
            _write_all(self._logs["combined"], rest + b"\n")


def resolve_command(args: list[str], env: dict[str, str]) -> list[str]:
    """Find a bare command on the replica's ``PATH``, else next to this Python interpreter.

    ``torchrun`` or ``python`` of the environment that runs torchx are found even when that
    environment is not activated (its ``bin`` is not on ``PATH``).
    """
    cmd = args[0] if args else ""
    if not cmd or "/" in cmd or find_executable(cmd, env.get("PATH", os.defpath)):
        return args
    beside = os.path.join(os.path.dirname(sys.executable), cmd)
    return [beside, *args[1:]] if find_executable(cmd, os.path.dirname(beside)) else args


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
