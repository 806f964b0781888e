"""App and replica states and status types (re-exported from :mod:`torchx.specs.api`)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from torchx.specs._constants import NONE
from torchx.specs._errors import TorchXError
from torchx.specs._status_format import error_summary, format_error_message, replica_text

__all__ = [
    "AppState",
    "ReplicaState",
    "is_terminal",
    "is_started",
    "_TERMINAL_STATES",
    "ReplicaStatus",
    "RoleStatus",
    "AppStatus",
    "AppStatusError",
]


class AppState(int, Enum):
    """The state of an application (or of a replica).

    ``str(s)`` is the name, ``repr(s)`` is ``"NAME (value)"``.
    """

    UNSUBMITTED = 0
    SUBMITTED = 1
    PENDING = 2
    RUNNING = 3
    SUCCEEDED = 4
    FAILED = 5
    CANCELLED = 6
    UNKNOWN = 7

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{self.name} ({self.value})"


ReplicaState = AppState

_TERMINAL_STATES: list[AppState] = [AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED]
_STARTED_STATES: list[AppState] = [*_TERMINAL_STATES, AppState.RUNNING]


def is_terminal(state: AppState) -> bool:
    """Returns True for SUCCEEDED, FAILED and CANCELLED."""
    return state in _TERMINAL_STATES


def is_started(state: AppState) -> bool:
    """Returns True for RUNNING or a terminal state."""
    return state in _STARTED_STATES


@dataclass
class ReplicaStatus:
    """The status of one replica.

    Args:
        id: the node rank of the replica.
        state: the replica state.
        role: the role name.
        hostname: the replica's host.
        structured_error_msg: the replica's error (JSON) or ``NONE``.
        hostaddr: the replica's address (defaults to ``hostname``).
    """

    id: int
    state: AppState
    role: str
    hostname: str
    structured_error_msg: str = NONE
    hostaddr: str | None = None

    def __post_init__(self) -> None:
        if self.hostaddr is None:
            self.hostaddr = self.hostname


@dataclass
class RoleStatus:
    """The status of every replica of a role.

    Args:
        role: the role name.
        replicas: the replica statuses.
    """

    role: str
    replicas: list[ReplicaStatus]

    def to_json(self) -> dict[str, Any]:
        """Returns ``{"role": ..., "replicas": [asdict(replica), ...]}``."""
        return {"role": self.role, "replicas": [asdict(r) for r in self.replicas]}


def _load_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


@dataclass
class AppStatus:
    """The status of an application, as returned by ``Runner.status``.

    Args:
        state: the app state.
        num_restarts: how many times the app was restarted (-1 if unknown).
        msg: a human readable message.
        structured_error_msg: the app's error (JSON) or ``NONE``.
        ui_url: a URL where the app can be inspected.
        roles: the per-role replica statuses.
    """

    state: AppState
    num_restarts: int = 0
    msg: str = ""
    structured_error_msg: str = NONE
    ui_url: str | None = None
    roles: list[RoleStatus] = field(default_factory=list)

    def is_terminal(self) -> bool:
        """Returns True if the app is in a terminal state."""
        return is_terminal(self.state)

    def error_summary(self) -> str:
        """Returns one line saying why the app failed, or ``""`` when there is no error.

        The line is the last non-empty line of the error message of
        ``structured_error_msg`` (torchelastic's ``{"message": {"message": ...}}`` or a flat
        ``{"message": ...}``, else the text itself); when the app has none, the first
        replica error that has one, FAILED replicas before the others (which were usually
        stopped because of them).
        """
        found = error_summary(self.structured_error_msg)
        if found:
            return found
        replicas = [replica for role in self.roles for replica in role.replicas]
        replicas.sort(key=lambda r: r.state != AppState.FAILED)  # stable: FAILED first
        for replica in replicas:
            found = error_summary(replica.structured_error_msg)
            if found:
                return found
        return ""

    def raise_for_status(self) -> None:
        """Raises :class:`AppStatusError` unless the app SUCCEEDED."""
        if self.state != AppState.SUCCEEDED:
            raise AppStatusError(self, f"job did not succeed: {self}")

    def _filtered_roles(self, filter_roles: list[str] | None) -> list[RoleStatus]:
        return [r for r in self.roles if not filter_roles or r.role in filter_roles]

    def to_json(self, filter_roles: list[str] | None = None) -> dict[str, Any]:
        """Returns a JSON-serializable dict (top-level state as a string).

        Args:
            filter_roles: only include these roles (None: all).

        Returns:
            ``{"state", "num_restarts", "roles", "msg", "structured_error_msg", "url"}``;
            replica states stay enum members, so ``json.dumps`` writes ints.
        """
        return {
            "state": str(self.state),
            "num_restarts": self.num_restarts,
            "roles": [r.to_json() for r in self._filtered_roles(filter_roles)],
            "msg": self.msg,
            "structured_error_msg": self.structured_error_msg,
            "url": self.ui_url,
        }

    def format(self, filter_roles: list[str] | None = None) -> str:
        """Formats the status for humans (what ``torchx status`` prints).

        Args:
            filter_roles: only include these roles (None: all).

        Returns:
            The multi-line status text.
        """
        return _format_status(self, self._filtered_roles(filter_roles))

    @staticmethod
    def _format_error_message(msg: str, header: str, width: int = 80) -> str:
        """Wraps ``msg`` on spaces under ``header`` (see ``format_error_message``)."""
        return format_error_message(msg, header, width)

    def __repr__(self) -> str:
        import yaml  # lazy: yaml ~17 ms; import torchx.specs must not load it

        status = asdict(self)
        status["state"] = repr(self.state)
        if self.structured_error_msg != NONE:
            status["structured_error_msg"] = _load_json(self.structured_error_msg)
        for role in status["roles"]:
            for replica in role["replicas"]:
                replica["state"] = repr(replica["state"])
        return str(yaml.dump({"AppStatus": status}))


def _format_role(role: RoleStatus) -> str:
    out = []
    for replica in sorted(role.replicas, key=lambda r: r.id):
        mark = "*" if replica.id == 0 else " "
        text = replica_text(replica.state, replica.structured_error_msg, replica.hostname)
        out.append(f"\n {mark}{role.role}[{replica.id}]:{text}")
    return "".join(out)


def _format_status(status: AppStatus, roles: list[RoleStatus]) -> str:
    """The ``AppStatus:`` text block of ``status`` with ``roles``, ending with four spaces."""
    roles_text = "".join(_format_role(r) for r in roles)
    return (
        "AppStatus:\n"
        f"    State: {status.state}\n"
        f"    Num Restarts: {status.num_restarts}\n"
        f"    Roles: {roles_text}\n"
        f"    Msg: {status.msg}\n"
        f"    Structured Error Msg: {status.structured_error_msg}\n"
        f"    UI URL: {status.ui_url}\n"
        "    "
    )


class AppStatusError(TorchXError):
    """Raised by :meth:`AppStatus.raise_for_status`; ``.status`` holds the status."""

    def __init__(self, status: AppStatus, *args: object) -> None:
        super().__init__(*args)
        self.status = status
