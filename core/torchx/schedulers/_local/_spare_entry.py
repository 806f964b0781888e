"""Entry of a prestarted ("spare") supervisor: it starts before its app exists, then runs it.

The launcher starts it with ``--channel-fd N``, one end of an ``AF_UNIX`` ``SOCK_SEQPACKET``
pair. The spare imports the supervisor and becomes a child subreaper at once (``ctypes`` is
slow to import: this way it is off the app's path too), then blocks on the channel for one
message: ``L`` (attached) or ``D`` (detached) followed by the app dir, carrying the app's
listening control socket (and, attached, the lifeline's read end) as ``SCM_RIGHTS``. From
there it runs exactly as a supervisor started for that app. EOF on the channel (the launcher
discarded the spare, or died) ends it with nothing done. Stdlib only, like the supervisor.
"""

from __future__ import annotations

import _socket
import os
import sys

from torchx.schedulers._local._wire import SUPERVISOR_LOG
from torchx.schedulers._local.supervisor import become_subreaper, run

__all__ = ["main", "receive"]

_USAGE = "usage: torchx-local-spare --channel-fd N"
_MAX_MESSAGE = 8192  # a flag byte and an app dir (PATH_MAX is 4096 on Linux)
_FD_SIZE = 4  # SCM_RIGHTS carries C ints


def receive(channel_fd: int) -> tuple[str, int, int | None] | None:
    """Blocks until the launcher assigns an app: ``(app_dir, control_fd, launcher_fd)``.

    Returns None on EOF or on a message without a control socket (nothing to run).
    """
    channel = _socket.socket(fileno=channel_fd)
    try:
        data, ancillary, _, _ = channel.recvmsg(_MAX_MESSAGE, _socket.CMSG_SPACE(2 * _FD_SIZE))
    finally:
        channel.close()
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % _FD_SIZE
            fds += [
                int.from_bytes(payload[i : i + _FD_SIZE], sys.byteorder)
                for i in range(0, usable, _FD_SIZE)
            ]
    attached = data[:1] == b"L"
    if not data[1:] or len(fds) != 1 + attached:
        for fd in fds:
            os.close(fd)
        return None
    return os.fsdecode(data[1:]), fds[0], fds[1] if attached else None


def _log_to(path: str) -> None:
    """Points stdout and stderr at the app's supervisor log (the spare started on /dev/null)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``--channel-fd N``; waits for an app, then supervises it."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "--channel-fd" or not args[1].isdigit():
        raise SystemExit(_USAGE)
    become_subreaper()  # ctypes is slow to import: paid before the app exists
    assignment = receive(int(args[1]))
    if assignment is None:
        return 0
    app_dir, control_fd, launcher_fd = assignment
    os.chdir(app_dir)
    _log_to(os.path.join(app_dir, SUPERVISOR_LOG))
    return run(app_dir, control_fd, launcher_fd)
