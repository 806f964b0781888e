"""The per-app supervisor of ``local_cwd`` (run as ``python -m ...supervisor APP_DIR``).

It owns the app's replicas (one process group each), copies their output into log files, applies
retries, fans a failure out to the other replicas, and writes ``state.json`` on every transition.
It ends the app when it receives SIGTERM/SIGINT/SIGHUP or a ``cancel`` command, and, when attached,
when its launcher dies (EOF on ``--launcher-fd``). It is a child subreaper, so descendants that
leave their replica's process group are still found and killed. The terminal state is written only
once nothing the app started is left running. Stdlib only, so it starts fast.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import selectors
import signal
import socket
import struct
import sys
import time
from pathlib import Path

from torchx.schedulers._local._procs import children as _children
from torchx.schedulers._local._protocol import (
    REQUEST_FILE,
    STATE_FILE,
    parse_supervisor_args,
    read_json,
    restore_launcher_env,
    spawn_env,
    write_json_atomic,
)
from torchx.schedulers._local._reasons import exit_reason, start_error, stopped_reason
from torchx.schedulers._local._replica import Replica

TYPE_CHECKING = False  # stdlib-only and fast to start: typing is imported for checkers only
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Supervisor", "main"]

_PR_SET_CHILD_SUBREAPER = 36
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_TICK = 0.05
_DIR_CHECK = 1.0  # seconds between checks that the app's state dir still exists


class Supervisor:
    """Runs one app described by ``APP_DIR/request.json`` until it ends.

    Args:
        app_dir: the app's state dir.
        control: the listening control socket (bound by the launcher).
        launcher_fd: read end of the attached launcher's pipe, or None when detached.
    """

    def __init__(self, app_dir: Path, control: socket.socket, launcher_fd: int | None) -> None:
        request = read_json(app_dir / REQUEST_FILE)
        if request is None:
            raise SystemExit(f"torchx supervisor: cannot read {app_dir / REQUEST_FILE}")
        self.app_dir = app_dir
        self.request = request
        self.grace = float(request.get("grace_period", 10.0))
        self.roles: list[dict[str, Any]] = request["roles"]
        self.role_restarts = {role["name"]: 0 for role in self.roles}
        self.app_restarts = 0
        libc = ctypes.CDLL(None, use_errno=True)
        self._libc = libc
        inherited = restore_launcher_env(os.environ)
        self.replicas = [
            Replica(role["name"], i, {**spec, "env": spawn_env(spec["env"], inherited)}, None)
            for role in self.roles
            for i, spec in enumerate(role["replicas"])
        ]
        self.seq, self.state, self.msg, self.num_restarts = 0, "PENDING", "", 0
        self.phase = "running"
        self.final_state = ""
        self.started_at = time.time()
        self.sel = selectors.DefaultSelector()
        self.control = control
        self.launcher_fd = launcher_fd
        self.reasons: dict[tuple[str, int], tuple[str, float]] = {}  # why a replica ended
        self.clients: dict[socket.socket, bytes] = {}
        self.waiters: dict[socket.socket, str] = {}
        self._pid = os.getpid()
        self._dir_checked = time.monotonic()

    # -- setup -------------------------------------------------------------------------------

    def _setup(self) -> None:
        self._libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        del soft
        rfd, wfd = os.pipe()
        os.set_blocking(rfd, False)
        os.set_blocking(wfd, False)
        signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
        for sig in (signal.SIGCHLD, *_STOP_SIGNALS):
            signal.signal(sig, _ignore)
        self.sel.register(rfd, selectors.EVENT_READ, (self._on_signals, rfd))
        self.control.setblocking(False)
        self.sel.register(self.control, selectors.EVENT_READ, (self._on_accept, self.control))
        if self.launcher_fd is not None:
            os.set_blocking(self.launcher_fd, False)
            fd = self.launcher_fd
            self.sel.register(fd, selectors.EVENT_READ, (self._on_launcher, fd))

    # -- main loop ---------------------------------------------------------------------------

    def run(self) -> int:
        """Run the app to its end; return the supervisor's exit code (0)."""
        self._setup()
        for replica in self.replicas:
            if self.phase == "running":
                self._spawn(replica)
        if self.phase == "running":
            self.state = "RUNNING"
        self._write_state()
        while self.phase != "done":
            busy = self.phase == "stopping" or any(r.restart_pending for r in self.replicas)
            for key, _ in self.sel.select(_TICK if busy else _DIR_CHECK):
                callback, arg = key.data
                callback(arg)
            self._reap()
            self._check_app_dir()
            self._advance()
        self._finish()
        return 0

    def _spawn(self, replica: Replica) -> None:
        error = replica.spawn(self.sel)
        if error is not None:
            replica.state, replica.exit_code = "FAILED", 127
            reason = start_error(replica.spec, error)
            self.reasons[(replica.role, replica.idx)] = (reason, time.time())
            self._on_failure(replica, f"could not start: {reason}")

    def _reap(self) -> None:
        by_pid = {r.pid: r for r in self.replicas if r.pid is not None}
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            replica = by_pid.get(pid)
            if replica is not None:
                self._on_exit(replica, os.waitstatus_to_exitcode(status))

    def _on_exit(self, replica: Replica, code: int) -> None:
        replica.reaped(code)
        if replica.restart_pending:
            replica.state = "PENDING"
        elif code == 0:
            replica.state = "SUCCEEDED"
        elif replica.stopping:
            replica.state = "CANCELLED"
            self._record(replica, stopped_reason(code, self.msg))
        else:
            replica.state = "FAILED"
            self._record(replica, exit_reason(code))
            self._on_failure(replica, exit_reason(code))
        self._write_state()

    def _record(self, replica: Replica, reason: str) -> None:
        self.reasons[(replica.role, replica.idx)] = (reason, time.time())

    def _on_failure(self, replica: Replica, reason: str) -> None:
        if self.phase != "running":
            return
        role = next(r for r in self.roles if r["name"] == replica.role)
        policy, limit = role.get("retry_policy", "APPLICATION"), int(role.get("max_retries", 0))
        if policy == "REPLICA" and replica.restarts < limit:
            replica.restarts += 1
            targets = [replica]
        elif policy == "ROLE" and self.role_restarts[replica.role] < limit:
            self.role_restarts[replica.role] += 1
            targets = [r for r in self.replicas if r.role == replica.role]
        elif policy == "APPLICATION" and self.app_restarts < limit:
            self.app_restarts += 1
            targets = list(self.replicas)
        else:
            msg = f"replica {replica.role}/{replica.idx} {reason}"
            self._begin_stop("FAILED", msg)
            return
        self.num_restarts += 1
        self.msg = f"restarting after replica {replica.role}/{replica.idx} {reason}"
        for target in targets:
            target.restart_pending = True
            target.state = "PENDING"
            target.terminate(self.grace)

    def _advance(self) -> None:
        now = time.monotonic()
        for replica in self.replicas:
            replica.kill_if_due(now)
        if self.phase == "running":
            for replica in self.replicas:
                if replica.restart_pending and not replica.busy() and self.phase == "running":
                    replica.restart_pending = False
                    self._spawn(replica)
                    self._write_state()
            if all(r.state == "SUCCEEDED" for r in self.replicas):
                self._begin_stop("SUCCEEDED", "")
        if self.phase == "stopping" and not any(r.busy() for r in self.replicas):
            self.phase = "done"

    def _check_app_dir(self) -> None:
        """Stop the app if its state dir was deleted: nothing could find or stop it any more."""
        now = time.monotonic()
        if self.phase != "running" or now < self._dir_checked + _DIR_CHECK:
            return
        self._dir_checked = now
        if not (self.app_dir / REQUEST_FILE).exists():
            self._begin_stop("CANCELLED", f"the app's state dir {self.app_dir} was deleted")

    def _begin_stop(self, final_state: str, msg: str) -> None:
        if self.phase != "running":
            return
        self.phase, self.final_state, self.msg = "stopping", final_state, msg
        for replica in self.replicas:
            replica.restart_pending = False
            replica.terminate(self.grace)
        if final_state != "SUCCEEDED":
            self._write_state()

    def _finish(self) -> None:
        self._kill_escaped()
        for replica in self.replicas:
            replica.close()
            if replica.state in ("PENDING", "RUNNING"):
                replica.state = "CANCELLED"
                started = replica.proc is not None
                self._record(replica, stopped_reason(None, self.msg, started))
        self.state = self.final_state
        self._write_state(final=True)
        self._write_summary()
        for client in list(self.clients):
            self._drop(client)
        self.control.close()

    def _kill_escaped(self) -> None:
        """SIGKILL descendants that left their replica's group (they were reparented to us)."""
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            self._reap()
            children = _children(self._pid)
            if not children:
                return
            for pid in children:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)

    # -- events ------------------------------------------------------------------------------

    def _on_signals(self, fd: int) -> None:
        with contextlib.suppress(BlockingIOError):
            for signum in os.read(fd, 512):
                if signum in _STOP_SIGNALS:
                    name = signal.Signals(signum).name
                    self._begin_stop("CANCELLED", f"cancelled (supervisor got {name})")

    def _on_launcher(self, fd: int) -> None:
        with contextlib.suppress(BlockingIOError):
            if os.read(fd, 512):
                return
        self.sel.unregister(fd)
        os.close(fd)
        pid = self.request.get("launcher_pid")
        self._begin_stop("CANCELLED", f"launcher process {pid} exited; attached app stopped")

    def _on_accept(self, sock: socket.socket) -> None:
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while True:
                client, _ = sock.accept()
                client.setblocking(False)
                self.clients[client] = b""
                self.sel.register(client, selectors.EVENT_READ, (self._on_client, client))

    def _on_client(self, client: socket.socket) -> None:
        try:
            data = client.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop(client)
            return
        buffer = self.clients[client] + data
        while client in self.clients and b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            self.clients[client] = buffer
            self._command(client, line.decode(errors="replace").split())

    def _command(self, client: socket.socket, words: list[str]) -> None:
        if words[:1] == ["wait"] and len(words) == 2 and words[1] == self.state:
            self.waiters[client] = self.state
            return
        if words == ["cancel"]:
            pid, uid, _ = struct.unpack(
                "3i", client.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            )
            if uid in (0, os.getuid()):
                self._begin_stop("CANCELLED", f"cancelled by process {pid}")
        self._drop(client)

    def _drop(self, client: socket.socket) -> None:
        self.waiters.pop(client, None)
        if self.clients.pop(client, None) is not None:
            self.sel.unregister(client)
        client.close()

    # -- state -------------------------------------------------------------------------------

    def _write_state(self, final: bool = False) -> None:
        self.seq += 1
        data: dict[str, Any] = {
            "app_id": self.request["app_id"],
            "seq": self.seq,
            "state": self.state,
            "msg": self.msg,
            "num_restarts": self.num_restarts,
            "supervisor_pid": self._pid,
            "started_at": self.started_at,
            "ended_at": time.time() if final else None,
            "roles": [
                {"name": role["name"], "replicas": self._replica_states(role["name"])}
                for role in self.roles
            ],
        }
        with contextlib.suppress(FileNotFoundError):  # the state dir was deleted
            write_json_atomic(self.app_dir / STATE_FILE, data)
        for waiter, seen in list(self.waiters.items()):
            if seen != self.state:
                self._drop(waiter)

    def _replica_states(self, role: str) -> list[dict[str, Any]]:
        return [
            {
                "id": r.idx,
                "state": r.state,
                "pid": r.proc.pid if r.proc is not None else None,
                "exit_code": r.exit_code,
                "restarts": r.restarts,
                **self._reason_fields(r),
            }
            for r in self.replicas
            if r.role == role
        ]

    def _reason_fields(self, replica: Replica) -> dict[str, Any]:
        if replica.state not in ("FAILED", "CANCELLED"):
            return {}
        reason, at = self.reasons.get((replica.role, replica.idx), ("", 0.0))
        return {"reason": reason, "ended_at": at} if reason else {}

    def _write_summary(self) -> None:
        log_dir = Path(self.request.get("log_dir") or self.app_dir)
        summary = {
            "app_id": self.request["app_id"],
            "state": self.state,
            "num_restarts": self.num_restarts,
            "roles": {role["name"]: self._replica_states(role["name"]) for role in self.roles},
        }
        with contextlib.suppress(OSError):
            write_json_atomic(log_dir / "SUCCESS", summary)


def _ignore(signum: int, frame: object) -> None:
    """Python-level no-op handler: the wakeup fd carries the signal to the loop."""


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse ``APP_DIR --control-fd N [--launcher-fd N]`` and run the app."""
    app_dir, control_fd, launcher_fd = parse_supervisor_args(sys.argv[1:] if argv is None else argv)
    control = socket.socket(fileno=control_fd)
    return Supervisor(app_dir, control, launcher_fd).run()


if __name__ == "__main__":
    sys.exit(main())
