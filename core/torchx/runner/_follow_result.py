"""The result of following an app and the one failure message (re-exported by ``follow``)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from torchx.specs.api import AppHandle, AppStatus

__all__ = ["FollowResult", "failure_message"]


def failure_message(
    app_handle: AppHandle,
    status: Optional[AppStatus],
    tails: Optional[dict[str, list[str]]] = None,
    *,
    deadline_expired: bool = False,
    startup_reason: str = "",
) -> str:
    """Returns the text an app that did not succeed is reported with.

    The first line is ``TorchX app <handle> ended <STATE>: <why>`` (``why``: the structured
    error's summary, else the status message); the app's status follows, then the last lines
    of each failed replica.

    Args:
        app_handle: the app.
        status: its last status (None: the app no longer exists).
        tails: ``{"role/replica": last lines}`` of the failed replicas.
        deadline_expired: the app was still running at its deadline.
        startup_reason: why the app did not start in time (its startup timeout passed).
    """
    why = _why(status, deadline_expired, startup_reason)
    if status is None:
        return f"TorchX app {app_handle} {why}"
    if startup_reason and not status.is_terminal():
        head = f"TorchX app {app_handle} {startup_reason} (kept running)"
    elif deadline_expired and not status.is_terminal():
        head = f"TorchX app {app_handle} is still {status.state.name} at its deadline"
        head = f"{head} (kept running)"
    else:
        head = f"TorchX app {app_handle} ended {status.state.name}"
        head = f"{head}: {why}" if why else head
    parts = [head, status.format()]
    for key, lines in (tails or {}).items():
        if lines:
            body = "\n".join(f"  {line}" for line in lines)
            parts.append(f"last {len(lines)} log lines of {key}:\n{body}")
    return "\n".join(parts)


def _why(status: Optional[AppStatus], deadline_expired: bool, startup_reason: str = "") -> str:
    """One line saying why the app did not succeed ("" when there is nothing to say)."""
    if status is None:
        return "no longer exists (purged by its scheduler?)"
    if startup_reason:
        return startup_reason + ("" if status.is_terminal() else " (kept running)")
    if deadline_expired:
        return "its deadline passed" + ("" if status.is_terminal() else " (kept running)")
    return status.error_summary() or (status.msg or "").strip()


@dataclasses.dataclass
class FollowResult:
    """How a followed app ended.

    Attributes:
        app_handle: the app.
        status: its last status (terminal unless the deadline passed and the app was kept;
            None when the app no longer exists).
        tails: ``{"role/replica": last log lines}`` of each FAILED replica (of every known
            replica when the app FAILED without per-replica states).
        deadline_expired: the deadline passed before the app ended.
        cancelled: the follow layer cancelled the app (at the deadline or startup timeout).
        startup_reason: set when the startup timeout passed: why the app did not start,
            with the scheduler's reason (``did not start within 60s (PENDING: worker[0]
            waiting: ImagePullBackOff: ...)``); ``""`` otherwise.
        logs_shown: ``{"role/replica": n}``: how many log lines of each replica the follow
            delivered to ``on_log`` (counting lines skipped with ``log_skip``); empty
            without streaming. A later reader shows only the lines after those.
    """

    app_handle: AppHandle
    status: Optional[AppStatus]
    tails: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    deadline_expired: bool = False
    cancelled: bool = False
    startup_reason: str = ""
    logs_shown: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def startup_expired(self) -> bool:
        """Whether the startup timeout passed before the app started."""
        return bool(self.startup_reason)

    @property
    def state(self) -> str:
        """The state's name (``SUCCEEDED``, ``FAILED``, ...), ``UNKNOWN`` for a vanished app."""
        return self.status.state.name if self.status is not None else "UNKNOWN"

    @property
    def succeeded(self) -> bool:
        """Whether the app SUCCEEDED."""
        return self.state == "SUCCEEDED"

    @property
    def reason(self) -> str:
        """Why the app did not succeed, in a few words (``""`` when it did).

        The structured error's summary line, else the status message, else the state name;
        ``its deadline passed`` for an app the deadline stopped, :attr:`startup_reason` for
        one that did not start in time.
        """
        if self.succeeded:
            return ""
        return _why(self.status, self.deadline_expired, self.startup_reason) or self.state

    def failure_message(self) -> str:
        """The full :func:`failure_message` (``""`` when the app succeeded)."""
        if self.succeeded:
            return ""
        return failure_message(
            self.app_handle,
            self.status,
            self.tails,
            deadline_expired=self.deadline_expired,
            startup_reason=self.startup_reason,
        )
