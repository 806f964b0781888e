"""Launcher-side view of local apps on disk: find, describe, list, wait for and cancel them."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from typing import Any, Optional

from torchx.schedulers._api_types import DescribeAppResponse, ListAppResponse
from torchx.schedulers._local import _protocol as proto
from torchx.specs.api import NONE, AppState, ReplicaStatus, RetryPolicy, Role, RoleStatus

__all__ = ["LocalApp", "find_app", "list_apps"]

_SAFE_ID = re.compile(r"[A-Za-z0-9_.\-]+")


class LocalApp:
    """An app found under the state dir.

    Args:
        app_dir: the app's state dir.
        request: the parsed ``request.json``.
    """

    def __init__(self, app_dir: str, request: dict[str, Any]) -> None:
        self.app_dir = app_dir
        self.request = request
        self.app_id = str(request["app_id"])
        self.control = str(request["control"])

    def raw_state(self) -> dict[str, Any]:
        """Return ``state.json`` as written (an empty PENDING state if it cannot be read)."""
        return proto.read_json(os.path.join(self.app_dir, proto.STATE_FILE)) or {
            "state": "PENDING",
            "seq": 0,
        }

    def state(self) -> dict[str, Any]:
        """Return the current state; a dead supervisor without a final state means FAILED."""
        state = self.raw_state()
        if state.get("state") in proto.TERMINAL_STATES or proto.is_alive(self.control):
            return state
        state = self.raw_state()  # it may have written its final state just before exiting
        if state.get("state") not in proto.TERMINAL_STATES:
            proto.kill_marked(str(self.app_dir))  # reap what the dead supervisor left running
            state = dict(state)
            state["state"] = "FAILED"
            state["msg"] = (
                f"the supervisor of app {self.app_id} exited without writing a final state;"
                f" see {os.path.join(self.app_dir, proto.SUPERVISOR_LOG)}"
            )
        return state

    def app_state(self) -> AppState:
        """Return the current ``AppState``."""
        return AppState[self.state().get("state", "UNKNOWN")]

    def wait_for_change(self, timeout: float) -> None:
        """Block until the state changes, the supervisor exits, or ``timeout`` passes."""
        state = self.raw_state()
        if state.get("state") in proto.TERMINAL_STATES:
            return
        proto.wait_change(self.control, str(state.get("state", "PENDING")), timeout)

    def wait_terminal(self, timeout: float) -> bool:
        """Wait until the app is terminal; return whether it is."""
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            if self.state().get("state") in proto.TERMINAL_STATES:
                return True
            self.wait_for_change(remaining)
        return self.state().get("state") in proto.TERMINAL_STATES

    def cancel(self) -> None:
        """Ask the supervisor to stop the app and wait until it has (grace period + 10 s)."""
        if proto.send_cancel(self.control):
            self.wait_terminal(float(self.request.get("grace_period", 10.0)) + 10.0)

    def log_file(self, role_name: str, k: int, stream: str) -> Optional[str]:
        """Return the log file of replica ``k`` of ``role_name`` (None if it has none).

        Raises:
            ValueError: no such role or replica.
        """
        roles = {role["name"]: role for role in self.request["roles"]}
        if role_name not in roles:
            import difflib  # lazy: only for the error (difflib ~2 ms)

            close = difflib.get_close_matches(role_name, list(roles), n=1)
            hint = f"Did you mean `{close[0]}`?" if close else f"Roles: {sorted(roles)}"
            raise ValueError(f"app `{self.app_id}` has no role `{role_name}`. {hint}")
        replicas = roles[role_name]["replicas"]
        if not 0 <= k < len(replicas):
            raise ValueError(
                f"role `{role_name}` of app `{self.app_id}` has {len(replicas)} replica(s);"
                f" replica {k} does not exist (use 0..{len(replicas) - 1})"
            )
        path = replicas[k].get(stream)
        return str(path) if path else None

    def describe(self) -> DescribeAppResponse:
        """Build the ``DescribeAppResponse`` from the files on disk."""
        state = self.state()
        return DescribeAppResponse(
            app_id=self.app_id,
            state=AppState[state.get("state", "UNKNOWN")],
            num_restarts=int(state.get("num_restarts", 0)),
            msg=str(state.get("msg") or NONE),
            structured_error_msg=self._oldest_error() or NONE,
            ui_url=f"file://{self.request.get('log_dir') or self.app_dir}",
            roles_statuses=self._role_statuses(state),
            roles=self._roles(),
        )

    def _role_statuses(self, state: dict[str, Any]) -> list[RoleStatus]:
        by_role = {role["name"]: role.get("replicas", []) for role in state.get("roles", [])}
        statuses = []
        for role in self.request["roles"]:
            name = role["name"]
            replicas = by_role.get(name) or [
                {"id": i, "state": "PENDING"} for i in range(len(role["replicas"]))
            ]
            statuses.append(
                RoleStatus(
                    name,
                    [
                        ReplicaStatus(
                            int(r["id"]),
                            AppState[r["state"]],
                            name,
                            "localhost",
                            structured_error_msg=_replica_error(r),
                        )
                        for r in replicas
                    ],
                )
            )
        return statuses

    def _roles(self) -> list[Role]:
        return [
            Role(
                name=role["name"],
                image=role.get("image", ""),
                entrypoint=role.get("entrypoint", ""),
                args=list(role.get("args", [])),
                num_replicas=len(role["replicas"]),
                max_retries=int(role.get("max_retries", 0)),
                retry_policy=RetryPolicy(role.get("retry_policy", "APPLICATION")),
            )
            for role in self.request["roles"]
        ]

    def _oldest_error(self) -> Optional[str]:
        files = []
        for role in self.request["roles"]:
            for replica in role["replicas"]:
                path = replica.get("error_file")
                if path and os.path.isfile(path):
                    files.append((os.stat(path).st_mtime, str(path)))
        if not files:
            return None
        with open(min(files)[1], encoding="utf-8", errors="replace") as f:
            return f.read()


def _replica_error(replica: dict[str, Any]) -> str:
    """The replica's error as a TorchX error-file JSON (message, errorCode, timestamp), or NONE.

    The supervisor records why a FAILED or CANCELLED replica ended (command not found, exit
    code, who cancelled the app), so ``torchx status`` shows it instead of "no reply file".
    """
    reason = replica.get("reason")
    if not reason or replica.get("state") not in ("FAILED", "CANCELLED"):
        return NONE
    return json.dumps(
        {
            "message": reason,
            "errorCode": replica.get("exit_code"),
            "timestamp": int(replica.get("ended_at") or 0),
        }
    )


def find_app(root: str, session: str, app_id: str) -> Optional[LocalApp]:
    """Find an app by id: in ``root/session`` first, then in any other session.

    Returns:
        The app, or None if no readable ``request.json`` exists for it.
    """
    if not _SAFE_ID.fullmatch(app_id) or app_id in (".", ".."):
        return None
    for app_dir in _candidates(root, session, app_id):
        request = proto.read_json(os.path.join(app_dir, proto.REQUEST_FILE))
        if request is not None and request.get("app_id") == app_id:
            return LocalApp(app_dir, request)
    return None


def _candidates(root: str, session: str, app_id: str) -> Iterator[str]:
    """The app's dir in ``session``, then (only if that is not it) in the other sessions."""
    yield os.path.join(root, session, app_id)
    try:
        sessions = sorted(e.name for e in os.scandir(root) if e.is_dir() and e.name[:1] != ".")
    except OSError:
        return
    for name in sessions:
        app_dir = os.path.join(root, name, app_id)
        if os.path.exists(app_dir):
            yield app_dir


def list_apps(root: str, session: str) -> list[ListAppResponse]:
    """List the apps of ``session`` under ``root``, oldest first."""
    session_dir = os.path.join(root, session)
    if not os.path.isdir(session_dir):
        return []
    found = []
    for entry in os.scandir(session_dir):
        app_dir = entry.path
        request = proto.read_json(os.path.join(app_dir, proto.REQUEST_FILE))
        if request is None or "app_id" not in request:
            continue
        app = LocalApp(app_dir, request)
        created = float(request.get("created_at", 0.0))
        found.append((created, app.app_id, app))
    found.sort(key=lambda item: (item[0], item[1]))
    return [
        ListAppResponse(
            app_id=app.app_id, state=app.app_state(), name=str(app.request.get("app_name", ""))
        )
        for _, _, app in found
    ]
