"""Process start and fd polling for the supervisor, on ``os`` and ``select`` alone.

``subprocess`` and ``selectors`` import ``re``, ``enum``, ``threading`` and more: about as much
time as the interpreter's own start, paid by every local app. ``os.posix_spawn`` starts a
process as fast as ``subprocess`` does (a ``fork`` from Python is three times slower).
"""

from __future__ import annotations

import errno
import os
import select

TYPE_CHECKING = False  # stdlib-only and fast to start: typing is imported for checkers only
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Callable
    from typing import Any
else:  # the C module: the signal module's enums cost a few ms to import
    import _signal

__all__ = ["Poller", "find_executable", "spawn"]

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


def find_executable(cmd: str, path: str) -> str | None:
    """The first executable file named ``cmd`` in the ``path`` (``PATH``-style) directories."""
    for folder in path.split(os.pathsep):
        candidate = os.path.join(folder or ".", cmd)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _executable(cmd: str, env: dict[str, str]) -> str:
    """Where the child's executable is, as ``execvpe`` would find it (after the ``chdir``)."""
    if "/" in cmd:
        if not os.path.exists(cmd):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), cmd)
        return cmd
    path = env.get("PATH", os.defpath)
    found = find_executable(cmd, path) if cmd else None
    if found is not None:
        return found
    denied = any(os.path.exists(os.path.join(d or ".", cmd)) for d in path.split(os.pathsep))
    code = errno.EACCES if cmd and denied else errno.ENOENT
    raise OSError(code, os.strerror(code), cmd)


def spawn(args: list[str], env: dict[str, str], cwd: str | None, out: int, err: int) -> int:
    """Start ``args`` in a new process group with stdin from /dev/null and stdout/stderr on fds.

    ``posix_spawn`` (a vfork-style start, as fast as ``subprocess``): the working directory is
    changed in this process first, so every path the supervisor keeps must be absolute. A bare
    command is looked up on ``env["PATH"]``. The child inherits no other descriptor as long as
    this process opens all of its own close-on-exec (Python's default).

    A process group, not a session: the supervisor has a session of its own (without a
    controlling terminal), which its replicas share; a group is all that ``killpg`` needs. A
    session per replica cost ~1.3 ms of each start here (with the kernel's scheduler autogroups,
    ``setsid`` makes one): 128 ``/bin/true`` spawns took 250-360 ms with ``setsid``, 75-125 ms
    with ``setpgroup``.

    Args:
        args: the command and its arguments.
        env: the complete environment.
        cwd: the working directory (None: the supervisor's).
        out: the fd that becomes the child's stdout.
        err: the fd that becomes the child's stderr.

    Returns:
        The child's pid (also its process group id).

    Raises:
        OSError: the working directory or the command could not be used (``filename`` says
            which), as ``subprocess.Popen`` raises it.
    """
    if cwd:
        os.chdir(cwd)
    exe = _executable(args[0] if args else "", env)
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, out, 1),
        (os.POSIX_SPAWN_DUP2, err, 2),
    ]
    try:
        return os.posix_spawn(
            exe, args, env, file_actions=actions, setpgroup=0, setsigdef=_RESTORED_SIGNALS
        )
    except OSError as e:
        raise OSError(e.errno, e.strerror, args[0]) from None
