"""The on-disk and socket protocol shared by the launcher and the per-app supervisor.

The launcher's side; the supervisor's own side is ``_wire`` (the names both use are re-exported).

App dir layout (``{state_root}/{session}/{app_id}/``): ``request.json`` (written once by the
launcher, with a ``marshal`` copy for the supervisor), ``state.json`` (rewritten atomically by
the supervisor on every transition, with a growing ``seq``), ``supervisor.log``. The supervisor
listens on an abstract-namespace unix socket (name in ``request.json["control"]``) that the
launcher bound before spawning it, so connecting never races the supervisor's start-up: a
refused connection means the supervisor has exited.
Commands are one line: ``wait STATE`` (the reply is EOF once the app's state is no longer
STATE, e.g. ``wait RUNNING``) and ``cancel``.
"""

from __future__ import annotations

# the C module: socket.py's enum conversions cost ~1.2 ms of every ``torchx run`` start
import _socket
import contextlib
import json
import os
import signal

from torchx.schedulers._local import _wire
from torchx.schedulers._local._wire import (
    REQUEST_FILE,
    STATE_FILE,
    SUPERVISOR_LOG,
    write_request,
)

TYPE_CHECKING = False  # stdlib-only and fast to start: typing is imported for checkers only
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "REQUEST_FILE",
    "STATE_FILE",
    "SUPERVISOR_LOG",
    "TERMINAL_STATES",
    "connect",
    "is_alive",
    "read_json",
    "send_cancel",
    "wait_change",
    "write_json_atomic",
    "write_request",
]

TERMINAL_STATES = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})


def write_json_atomic(path: str | os.PathLike[str], data: dict[str, Any]) -> None:
    """``_wire.write_json_atomic`` with ``json``'s C encoder (the supervisor's is pure Python)."""
    _wire.write_json_atomic(path, data, json.dumps)


def read_json(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Read a JSON object; None if the file is missing or not a JSON object."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


MARKER_ENV = "TORCHX_LOCAL_APP_DIR"  # set in every replica: finds an app's processes by env


def kill_marked(app_dir: str) -> int:
    """SIGKILLs every process whose environment has ``TORCHX_LOCAL_APP_DIR=app_dir``.

    Replicas and everything they start inherit the marker, so this finds an app's processes
    even after its supervisor died (e.g. SIGKILLed) and even those that left their process
    group. Processes of other users are skipped (their environ cannot be read).

    Args:
        app_dir: the app's state dir.

    Returns:
        The number of processes signalled.
    """
    marker = f"{MARKER_ENV}={app_dir}".encode()
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if marker in environ:
            with contextlib.suppress(OSError):
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
    return killed


def _address(name: str) -> str:
    return "\0" + name


def connect(name: str) -> _socket.socket | None:
    """Connect to a supervisor's control socket; None if no supervisor listens any more."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(_address(name))
    except OSError:
        sock.close()
        return None
    return sock


def is_alive(name: str) -> bool:
    """Return whether the supervisor listening on ``name`` is still running."""
    sock = connect(name)
    if sock is None:
        return False
    sock.close()
    return True


def send_cancel(name: str) -> bool:
    """Ask the supervisor to cancel its app; False if it is not running."""
    sock = connect(name)
    if sock is None:
        return False
    try:
        with contextlib.suppress(OSError):
            sock.sendall(b"cancel\n")
    finally:
        sock.close()
    return True


def wait_change(name: str, state: str, timeout: float) -> None:
    """Block until the app leaves ``state``, the supervisor exits, or ``timeout`` passes."""
    if timeout <= 0:
        return
    sock = connect(name)
    if sock is None:
        return
    try:
        with contextlib.suppress(OSError):
            sock.sendall(f"wait {state}\n".encode())
            sock.settimeout(timeout)
            sock.recv(1)
    finally:
        sock.close()
