"""Process start and fd polling for the supervisor, on ``os`` and ``select`` alone.

``subprocess`` and ``selectors`` import ``re``, ``enum``, ``threading`` and more: about as much
time as the interpreter's own start, paid by every local app. The supervisor is single-threaded,
so a plain ``fork`` + ``exec`` is safe here; exec failures come back through a close-on-exec pipe,
as ``subprocess`` does it.
"""

from __future__ import annotations

import os
import select

TYPE_CHECKING = False  # stdlib-only and fast to start: typing is imported for checkers only
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Callable
    from typing import Any
else:  # the C module: the signal module's enums cost a few ms to import
    import _signal

__all__ = ["Poller", "spawn"]

# Python ignores these at start-up; a replica gets the default back, as subprocess does it
_RESTORED_SIGNALS = tuple(
    getattr(_signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(_signal, name)
)


class Poller:
    """Readiness of file descriptors (``epoll``), each with a callback and its argument."""

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._data: dict[int, tuple[Callable[[Any], object], Any]] = {}

    def register(self, fd: int, callback: Callable[[Any], object], arg: Any) -> None:
        """Call ``callback(arg)`` whenever ``fd`` is readable (or at EOF/hang-up)."""
        self._epoll.register(fd, select.EPOLLIN)
        self._data[fd] = (callback, arg)

    def unregister(self, fd: int) -> None:
        """Stop watching ``fd`` (before it is closed); no-op if it is not watched."""
        if self._data.pop(fd, None) is not None:
            self._epoll.unregister(fd)

    def poll(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds and run the callbacks of the ready fds."""
        for fd, _ in self._epoll.poll(timeout):
            entry = self._data.get(fd)  # an earlier callback may have unregistered it
            if entry is not None:
                entry[0](entry[1])


def spawn(args: list[str], env: dict[str, str], cwd: str | None, out: int, err: int) -> int:
    """Start ``args`` in a new session with stdin from /dev/null and stdout/stderr on fds.

    A bare command is looked up on ``env["PATH"]``. Every other descriptor is closed in the
    child.

    Args:
        args: the command and its arguments.
        env: the complete environment.
        cwd: the working directory (None: the supervisor's).
        out: the fd that becomes the child's stdout.
        err: the fd that becomes the child's stderr.

    Returns:
        The child's pid (also its session and process group id).

    Raises:
        OSError: the working directory or the command could not be used (``filename`` says
            which), as ``subprocess.Popen`` raises it.
    """
    max_fd = os.sysconf("SC_OPEN_MAX")  # the soft limit of open files
    null = os.open(os.devnull, os.O_RDONLY)
    report_r, report_w = os.pipe()  # close-on-exec: EOF without data means exec worked
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child execs or exits, never returns
            _child(args, env, cwd, (null, out, err), report_w, max_fd)
        os.close(report_w)
        report_w = -1
        report = _read_all(report_r)
    finally:
        for fd in (null, report_r, report_w):
            if fd >= 0:
                os.close(fd)
    if report:
        os.waitpid(pid, 0)
        step, _, code = report.decode().partition(":")
        errno = int(code) if code.isdigit() else 0
        filename = cwd if step == "chdir" else args[0] if args else ""
        raise OSError(errno, os.strerror(errno), filename)
    return pid


def _child(
    args: list[str],
    env: dict[str, str],
    cwd: str | None,
    stdio: tuple[int, int, int],
    report: int,
    max_fd: int,
) -> None:  # pragma: no cover - runs in the forked child
    step = "setup"
    try:
        _signal.set_wakeup_fd(-1)  # a signal before exec must not reach the supervisor's loop
        os.setsid()
        for target, fd in enumerate(stdio):
            os.dup2(fd, target)
        os.closerange(3, report)
        os.closerange(report + 1, max_fd)
        for sig in _RESTORED_SIGNALS:
            _signal.signal(sig, _signal.SIG_DFL)
        if cwd:
            step = "chdir"
            os.chdir(cwd)
        step = "exec"
        if not args:
            raise FileNotFoundError(2, "empty command")
        if "/" in args[0]:
            os.execve(args[0], args, env)
        os.execvpe(args[0], args, env)
    except OSError as e:
        os.write(report, f"{step}:{e.errno or 0}".encode())
    except BaseException:
        os.write(report, f"{step}:0".encode())
    finally:
        os._exit(127)


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
