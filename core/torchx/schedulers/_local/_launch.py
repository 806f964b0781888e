"""Launcher side of ``local_cwd``: prepare an app's dirs and start its supervisor process."""

from __future__ import annotations

import _socket  # the C module: socket.py's enum conversions cost ~1.2 ms of a start
import _thread
import os
import subprocess
import sys
from typing import Any, Optional

from torchx.schedulers._local import _protocol as proto
from torchx.schedulers._local import _spare
from torchx.schedulers._local._request import PopenRequest, request_to_json
from torchx.schedulers._local._spare import IMPORT_ROOT, prestarted_supervisor
from torchx.schedulers._local._state import LocalApp
from torchx.schedulers._local._wire import allowed_env
from torchx.specs.api import AppState

__all__ = ["_LocalAppDef", "launch", "prestarted_supervisor"]

# -I -S: isolated, no site (no site-packages, PYTHON* variables or cwd on sys.path: the supervisor
# needs the standard library and torchx alone, and starts in a third less time); torchx's import
# root is its first argument. -c, not -m: runpy's imports would be paid by every app start.
_SUPERVISOR_MAIN = (
    "import sys; sys.path.insert(0, sys.argv.pop(1));"
    " from torchx.schedulers._local.supervisor import main; sys.exit(main())"
)


class _LocalAppDef:
    """An app this process launched: its dirs, supervisor process and (attached) lifeline.

    Args:
        id: the app id.
        log_dir: the app's log dir.
        app: the on-disk view of the app.
        supervisor: the supervisor process.
        lifeline: write end of the pipe whose EOF stops an attached app (None when detached).
    """

    def __init__(
        self,
        id: str,
        log_dir: str,
        app: LocalApp,
        supervisor: Optional[subprocess.Popen[bytes]] = None,
        lifeline: Optional[int] = None,
    ) -> None:
        self.id = id
        self.log_dir = log_dir
        self.app = app
        self.supervisor = supervisor
        self.lifeline = lifeline

    @property
    def attached(self) -> bool:
        """Whether the app stops when this process exits."""
        return self.lifeline is not None

    @property
    def state(self) -> AppState:
        """The app's current state (read from disk)."""
        return self.app.app_state()

    def is_terminal(self) -> bool:
        """Return whether the app has ended."""
        return self.state in (AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED)

    def close(self) -> None:
        """Drop the lifeline (an attached app that still runs is stopped by its supervisor)."""
        if self.lifeline is not None:
            os.close(self.lifeline)
            self.lifeline = None

    def __repr__(self) -> str:
        return f"_LocalAppDef(id={self.id!r}, log_dir={self.log_dir!r})"


def _check_log_files(request: PopenRequest) -> None:
    for params in request.role_params.values():
        for param in params:
            for path in (param.stdout, param.stderr, param.combined):
                if path and os.path.exists(path):
                    raise FileExistsError(
                        f"log file: {path} already exists, specify a different log_dir,"
                        " app_name, or remove the file and retry"
                    )


def _make_dirs(request: PopenRequest) -> str:
    app_dir = request.app_dir
    os.makedirs(os.path.dirname(app_dir) or ".", exist_ok=True)
    os.mkdir(app_dir, mode=0o700)
    for dirs in request.role_log_dirs.values():
        for replica_dir in dirs:
            os.makedirs(replica_dir, exist_ok=True)
    return app_dir


def launch(request: PopenRequest) -> _LocalAppDef:
    """Write the app's files and start its supervisor.

    The control socket (and, when attached, the lifeline pipe) is created here, before the
    supervisor starts, and handed over with ``pass_fds``, so other processes can connect to it
    at once and an early launcher death is still seen.

    Args:
        request: the dry-run request.

    Returns:
        The launched app.

    Raises:
        FileExistsError: a log file already exists.
    """
    _check_log_files(request)
    app_dir = _make_dirs(request)
    control_name = f"torchx-local-{os.urandom(16).hex()}"  # (uuid would import platform)
    control = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    lifeline_r: Optional[int] = None
    lifeline_w: Optional[int] = None
    try:
        control.bind("\0" + control_name)
        control.listen(128)
        data = request_to_json(request, control_name, os.getpid())
        proto.write_json_atomic(os.path.join(app_dir, proto.REQUEST_FILE), data)
        proto.write_request(app_dir, data)
        proto.write_json_atomic(os.path.join(app_dir, proto.STATE_FILE), _initial_state(data))
        cmd = [sys.executable, "-I", "-S", "-c", _SUPERVISOR_MAIN, IMPORT_ROOT, app_dir]
        cmd += ["--control-fd", str(control.fileno())]
        fds = [control.fileno()]
        if not request.detach:
            lifeline_r, lifeline_w = os.pipe()
            cmd += ["--launcher-fd", str(lifeline_r)]
            fds.append(lifeline_r)
        # env_allow: the supervisor itself starts with the filtered environment, so neither
        # its /proc/<pid>/environ nor its replicas' hold what was left out
        env = allowed_env(dict(os.environ), request.env_allow, request.env_drop)
        supervisor = _prestarted(app_dir, control.fileno(), lifeline_r, env)
        if supervisor is None:
            with open(os.path.join(app_dir, proto.SUPERVISOR_LOG), "ab") as log:
                supervisor = subprocess.Popen(
                    cmd,
                    env=env,
                    pass_fds=fds,
                    start_new_session=True,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    cwd=app_dir,
                )
            # reaps the supervisor once it exits (no zombie); _thread does not wait for the
            # thread to start as threading.Thread.start() does (a GIL hand-off per launch)
            _thread.start_new_thread(supervisor.wait, ())
    except BaseException:
        if lifeline_w is not None:
            os.close(lifeline_w)
        raise
    finally:
        control.close()
        if lifeline_r is not None:
            os.close(lifeline_r)
    if not _spare.blocks_open():  # the next app of this process finds its supervisor
        # waiting; started by a thread: the fork is off this launch's path
        _spare.replenish_soon(IMPORT_ROOT)
    app = LocalApp(app_dir, data)
    return _LocalAppDef(request.app_id, request.log_dir, app, supervisor, lifeline_w)


def _prestarted(
    app_dir: str, control_fd: int, launcher_fd: Optional[int], env: Optional[dict[str, str]]
) -> Optional[subprocess.Popen[bytes]]:
    """Hands the app to a spare supervisor; None if there is none or it declines.

    The spare of an open :func:`prestarted_supervisor` block, else the process's warm one
    (``_spare.replenish``). ``env`` is the environment the supervisor must have (None: this
    process's): a spare started with another one declines.
    """
    spare = _spare.take() or _spare.take_warm()
    if spare is None:
        return None
    if spare.assign(app_dir, control_fd, launcher_fd, env):
        return spare.process
    spare.discard()
    return None


def _initial_state(request: dict[str, Any]) -> dict[str, Any]:
    roles = request["roles"]
    return {
        "app_id": request["app_id"],
        "seq": 0,
        "state": "PENDING",
        "msg": "",
        "num_restarts": 0,
        "roles": [
            {
                "name": role["name"],
                "replicas": [{"id": i, "state": "PENDING"} for i in range(len(role["replicas"]))],
            }
            for role in roles
        ],
    }
