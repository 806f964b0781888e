"""The on-disk and socket protocol shared by the launcher and the per-app supervisor.

Stdlib only: the supervisor imports this module and nothing else from torchx.

App dir layout (``{state_root}/{session}/{app_id}/``): ``request.json`` (written once by the
launcher), ``state.json`` (rewritten atomically by the supervisor on every transition, with a
growing ``seq``), ``supervisor.log``. The supervisor listens on an abstract-namespace unix socket
(name in ``request.json["control"]``) that the launcher bound before spawning it, so connecting
never races the supervisor's start-up: a refused connection means the supervisor has exited.
Commands are one line: ``wait STATE`` (the reply is EOF once the app's state is no longer
STATE, e.g. ``wait RUNNING``) and ``cancel``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
from pathlib import Path

TYPE_CHECKING = False  # stdlib-only and fast to start: typing is imported for checkers only
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "REQUEST_FILE",
    "STATE_FILE",
    "SUPERVISOR_LOG",
    "TERMINAL_STATES",
    "launcher_env",
    "parse_supervisor_args",
    "restore_launcher_env",
    "spawn_env",
    "connect",
    "is_alive",
    "read_json",
    "send_cancel",
    "wait_change",
    "write_json_atomic",
]

REQUEST_FILE = "request.json"
STATE_FILE = "state.json"
SUPERVISOR_LOG = "supervisor.log"
TERMINAL_STATES = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
_SAVED_PYTHONPATH = "TORCHX_SUPERVISOR_SAVED_PYTHONPATH"


def spawn_env(recorded: dict[str, str], inherited: dict[str, str]) -> dict[str, str]:
    """The environment a replica starts with: the inherited one, then what the request records.

    ``request.json`` records only what the AppDef and torchx set (never the inherited
    environment, which may hold secrets); its ``PATH`` is a prefix put before the inherited
    ``PATH``.

    Args:
        recorded: the replica's ``env`` from ``request.json``.
        inherited: the environment the supervisor inherited from the launcher.
    """
    env = {**inherited, **recorded}
    paths = [p.strip(":") for p in (recorded.get("PATH"), inherited.get("PATH")) if p]
    joined = ":".join(p for p in paths if p)
    if joined:
        env["PATH"] = joined
    return env


def launcher_env(import_root: str) -> dict[str, str]:
    """The supervisor's environment: the launcher's, with ``import_root`` on ``PYTHONPATH``.

    The launcher's own ``PYTHONPATH`` is saved so :func:`restore_launcher_env` gives the
    replicas exactly the launcher's environment.
    """
    env = dict(os.environ)
    old = env.get("PYTHONPATH")
    env[_SAVED_PYTHONPATH] = "" if old is None else "=" + old
    env["PYTHONPATH"] = os.pathsep.join(p for p in (import_root, old) if p)
    return env


def restore_launcher_env(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """Returns the launcher's environment from the supervisor's (see :func:`launcher_env`)."""
    env = dict(environ)
    saved = env.pop(_SAVED_PYTHONPATH, None)
    if saved is not None:
        if saved.startswith("="):
            env["PYTHONPATH"] = saved[1:]
        else:
            env.pop("PYTHONPATH", None)
    return env


def read_json(path: Path) -> dict[str, Any] | None:
    """Read a JSON object; None if the file is missing or not a JSON object."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` atomically (temp file in the same dir, then ``os.replace``)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


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


def connect(name: str) -> socket.socket | None:
    """Connect to a supervisor's control socket; None if no supervisor listens any more."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
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
    with sock, contextlib.suppress(OSError):
        sock.sendall(b"cancel\n")
    return True


def wait_change(name: str, state: str, timeout: float) -> None:
    """Block until the app leaves ``state``, the supervisor exits, or ``timeout`` passes."""
    if timeout <= 0:
        return
    sock = connect(name)
    if sock is None:
        return
    with sock, contextlib.suppress(OSError):
        sock.sendall(f"wait {state}\n".encode())
        sock.settimeout(timeout)
        sock.recv(1)


def parse_supervisor_args(argv: list[str]) -> tuple[Path, int, int | None]:
    """Parses ``APP_DIR --control-fd N [--launcher-fd N]`` (what the launcher passes).

    No argparse: every app start pays for the supervisor's imports.
    """
    usage = "usage: torchx-local-supervisor APP_DIR --control-fd N [--launcher-fd N]"
    app_dir: Path | None = None
    fds: dict[str, int] = {}
    it = iter(argv)
    for arg in it:
        if arg in ("--control-fd", "--launcher-fd"):
            value = next(it, "")
            if not value.isdigit():
                raise SystemExit(f"{usage}\n{arg} needs a file descriptor number, got {value!r}")
            fds[arg] = int(value)
        elif app_dir is None and not arg.startswith("-"):
            app_dir = Path(arg)
        else:
            raise SystemExit(f"{usage}\nunexpected argument {arg!r}")
    if app_dir is None or "--control-fd" not in fds:
        raise SystemExit(usage)
    return app_dir, fds["--control-fd"], fds.get("--launcher-fd")
