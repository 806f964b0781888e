"""The per-app supervisor of ``local_cwd`` (run as ``python -m ...supervisor APP_DIR``).

It owns the app's replicas (one process group each), copies their output into log files, applies
retries, fans a failure out to the other replicas, and writes ``state.json`` on every transition.
It ends the app when it receives SIGTERM/SIGINT/SIGHUP or a ``cancel`` command, and, when attached,
when its launcher dies (EOF on ``--launcher-fd``). It is a child subreaper, so descendants that
leave their replica's process group are still found and killed. The terminal state is written only
once nothing the app started is left running. Stdlib only, so it starts fast.
"""

from __future__ import annotations

import _socket
import os
import resource
import sys
import time

from torchx.schedulers._local._procs import children as _children
from torchx.schedulers._local._reasons import exit_reason, start_error, stopped_reason
from torchx.schedulers._local._replica import Replica
from torchx.schedulers._local._spawn import Poller
from torchx.schedulers._local._wire import (
    REQUEST_FILE,
    STATE_FILE,
    parse_supervisor_args,
    read_request,
    spawn_env,
    write_json_atomic,
)

TYPE_CHECKING = False  # stdlib-only and fast to start: typing is imported for checkers only
if TYPE_CHECKING:
    import signal as _signal
    from typing import Any
else:  # the C module: the signal module's enums cost a few ms to import
    import _signal

__all__ = ["Supervisor", "become_subreaper", "main", "run"]

_PR_SET_CHILD_SUBREAPER = 36
_STOP_SIGNALS: dict[int, str] = {
    _signal.SIGTERM: "SIGTERM",
    _signal.SIGINT: "SIGINT",
    _signal.SIGHUP: "SIGHUP",
}
_TICK = 0.05
_DIR_CHECK = 1.0  # seconds between checks that the app's state dir still exists
_subreaper = False  # set by become_subreaper()


class Supervisor:
    """Runs one app described by ``APP_DIR/request.json`` until it ends.

    Args:
        app_dir: the app's state dir.
        control: the listening control socket (bound by the launcher).
        launcher_fd: read end of the attached launcher's pipe, or None when detached.
    """

    def __init__(self, app_dir: str, control: _socket.socket, launcher_fd: int | None) -> None:
        request = read_request(app_dir)
        if request is None:
            raise SystemExit(f"torchx supervisor: cannot read the request in {app_dir}")
        self.app_dir = app_dir
        self.request = request
        self.grace = float(request.get("grace_period", 10.0))
        self.roles: list[dict[str, Any]] = request["roles"]
        self.role_restarts = {role["name"]: 0 for role in self.roles}
        self.app_restarts = 0
        inherited = dict(os.environ)
        self.replicas = [
            Replica(
                role["name"],
                i,
                # no cwd: the app dir, where the supervisor started (it chdirs per replica)
                {
                    **spec,
                    "env": spawn_env(spec["env"], inherited, request.get("env_drop")),
                    "cwd": spec.get("cwd") or app_dir,
                },
            )
            for role in self.roles
            for i, spec in enumerate(role["replicas"])
        ]
        self.seq, self.state, self.msg, self.num_restarts = 0, "PENDING", "", 0
        self.phase = "running"
        self.final_state = ""
        self.started_at = time.time()
        self.poller = Poller()
        self.control = control
        self.launcher_fd = launcher_fd
        self.reasons: dict[tuple[str, int], tuple[str, float]] = {}  # why a replica ended
        self.clients: dict[int, tuple[_socket.socket, bytes]] = {}
        self.waiters: dict[int, str] = {}
        self._pid = os.getpid()
        self._dirty = False  # a transition is not in state.json yet
        self._dir_checked = time.monotonic()

    # -- setup -------------------------------------------------------------------------------

    def _setup(self) -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass
        rfd, wfd = os.pipe()
        os.set_blocking(rfd, False)
        os.set_blocking(wfd, False)
        _signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
        for sig in (_signal.SIGCHLD, *_STOP_SIGNALS):
            _signal.signal(sig, _ignore)
        self.poller.register(rfd, self._on_signals, rfd)
        self.control.setblocking(False)
        os.set_inheritable(self.control.fileno(), False)
        self.poller.register(self.control.fileno(), self._on_accept, self.control)
        if self.launcher_fd is not None:
            os.set_blocking(self.launcher_fd, False)
            os.set_inheritable(self.launcher_fd, False)
            self.poller.register(self.launcher_fd, self._on_launcher, self.launcher_fd)

    # -- main loop ---------------------------------------------------------------------------

    def run(self) -> int:
        """Run the app to its end; return the supervisor's exit code (0)."""
        self._setup()
        for replica in self.replicas:
            if self.phase == "running":
                self._spawn(replica)
        become_subreaper()
        if self.phase == "running":
            self.state = "RUNNING"
        self._dirty = True
        while self.phase != "done":
            if self._dirty:  # one write for all the transitions of a loop turn
                self._write_state()
            busy = self.phase == "stopping" or any(r.restart_pending for r in self.replicas)
            self.poller.poll(_TICK if busy else _DIR_CHECK)
            self._reap()
            self._check_app_dir()
            self._advance()
        self._finish()
        return 0

    def _spawn(self, replica: Replica) -> None:
        error = replica.spawn(self.poller)
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
        self._dirty = True

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
                    self._dirty = True
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
        if not os.path.exists(os.path.join(self.app_dir, REQUEST_FILE)):
            self._begin_stop("CANCELLED", f"the app's state dir {self.app_dir} was deleted")

    def _begin_stop(self, final_state: str, msg: str) -> None:
        if self.phase != "running":
            return
        self.phase, self.final_state, self.msg = "stopping", final_state, msg
        for replica in self.replicas:
            replica.restart_pending = False
            replica.terminate(self.grace)
        if final_state != "SUCCEEDED":
            self._dirty = True

    def _finish(self) -> None:
        self._kill_escaped()
        for replica in self.replicas:
            replica.close()
            if replica.state in ("PENDING", "RUNNING"):
                replica.state = "CANCELLED"
                self._record(replica, stopped_reason(None, self.msg, replica.started))
        self.state = self.final_state
        # the summary first: whoever sees the final state may read it at once
        self._write_summary()
        self._write_state(final=True)
        for fd in list(self.clients):
            self._drop(fd)
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
                try:
                    os.kill(pid, _signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.005)

    # -- events ------------------------------------------------------------------------------

    def _on_signals(self, fd: int) -> None:
        try:
            for signum in os.read(fd, 512):
                if signum in _STOP_SIGNALS:
                    name = _STOP_SIGNALS[signum]
                    self._begin_stop("CANCELLED", f"cancelled (supervisor got {name})")
        except BlockingIOError:
            pass

    def _on_launcher(self, fd: int) -> None:
        try:
            if os.read(fd, 512):
                return
        except BlockingIOError:
            return
        self.poller.unregister(fd)
        os.close(fd)
        pid = self.request.get("launcher_pid")
        self._begin_stop("CANCELLED", f"launcher process {pid} exited; attached app stopped")

    def _on_accept(self, sock: _socket.socket) -> None:
        while True:
            try:
                fd, _ = sock._accept()  # type: ignore[attr-defined]
            except (BlockingIOError, InterruptedError):
                return
            client = _socket.socket(fileno=fd)
            client.setblocking(False)
            self.clients[fd] = (client, b"")
            self.poller.register(fd, self._on_client, fd)

    def _on_client(self, fd: int) -> None:
        client, buffer = self.clients[fd]
        try:
            data = client.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop(fd)
            return
        buffer += data
        while fd in self.clients and b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            self.clients[fd] = (client, buffer)
            self._command(fd, line.decode(errors="replace").split())

    def _command(self, fd: int, words: list[str]) -> None:
        if words[:1] == ["wait"] and len(words) == 2 and words[1] == self.state:
            self.waiters[fd] = self.state
            return
        if words == ["cancel"]:
            client = self.clients[fd][0]
            cred = client.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
            pid, uid = (int.from_bytes(cred[k : k + 4], sys.byteorder) for k in (0, 4))
            if uid in (0, os.getuid()):
                self._begin_stop("CANCELLED", f"cancelled by process {pid}")
        self._drop(fd)

    def _drop(self, fd: int) -> None:
        self.waiters.pop(fd, None)
        entry = self.clients.pop(fd, None)
        if entry is not None:
            self.poller.unregister(fd)
            entry[0].close()

    # -- state -------------------------------------------------------------------------------

    def _write_state(self, final: bool = False) -> None:
        self._dirty = False
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
        try:
            write_json_atomic(os.path.join(self.app_dir, STATE_FILE), data)
        except FileNotFoundError:  # the state dir was deleted
            pass
        for waiter, seen in list(self.waiters.items()):
            if seen != self.state:
                self._drop(waiter)

    def _replica_states(self, role: str) -> list[dict[str, Any]]:
        return [
            {
                "id": r.idx,
                "state": r.state,
                "pid": r.last_pid,
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
        log_dir = self.request.get("log_dir") or self.app_dir
        summary = {
            "app_id": self.request["app_id"],
            "state": self.state,
            "num_restarts": self.num_restarts,
            "roles": {role["name"]: self._replica_states(role["name"]) for role in self.roles},
        }
        try:
            write_json_atomic(os.path.join(log_dir, "SUCCESS"), summary)
        except OSError:
            pass


def become_subreaper() -> None:
    """Orphaned descendants of the replicas become our children (so they are found and killed).

    A supervisor started for its app does this once the first replicas are started:
    ``ctypes`` costs about a third of its start, and a replica cannot start, fork and orphan
    a descendant that also left its process group in the moment before this runs. A spare
    supervisor does it while it waits for its app. Later calls do nothing.
    """
    global _subreaper
    if _subreaper:
        return
    import ctypes  # lazy: ~2 ms, a third of a supervisor start: after the replicas start

    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _subreaper = True


def _ignore(signum: int, frame: object) -> None:
    """Python-level no-op handler: the wakeup fd carries the signal to the loop."""


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse ``APP_DIR --control-fd N [--launcher-fd N]`` and run the app."""
    return run(*parse_supervisor_args(sys.argv[1:] if argv is None else argv))


def run(app_dir: str, control_fd: int, launcher_fd: int | None) -> int:
    """Runs the app of ``app_dir`` until it ends; returns the supervisor's exit code.

    Args:
        app_dir: the app's state dir (its request is read from there).
        control_fd: the listening control socket the launcher bound.
        launcher_fd: read end of the attached launcher's lifeline, or None when detached.
    """
    app_dir = os.path.abspath(app_dir)  # replicas are started after a chdir to their cwd
    control = _socket.socket(fileno=control_fd)
    return Supervisor(app_dir, control, launcher_fd).run()


if __name__ == "__main__":
    sys.exit(main())
