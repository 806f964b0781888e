"""The follow layer's decisions: given a status (or a failed status call) and the time, what next.

:class:`Engine` holds no runner and does no I/O: the blocking ``Follower`` and the async
``afollow`` both feed it what ``Runner.status`` returned (or raised) and carry out the
:class:`Action` it returns, so both follow an app by the same rules (deadline, startup timeout,
fail-fast, reasons, transient errors). Unit tests script statuses and times.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, NamedTuple, Optional

from torchx.runner._follow_startup import not_started, started, starting
from torchx.runner._follow_transient import Backoff

if TYPE_CHECKING:
    from torchx.specs.api import AppStatus

__all__ = ["Action", "Engine", "Stop"]


class Stop(enum.Enum):
    """Why the follow stops."""

    ENDED = "ended"
    """The app reached a terminal state."""
    VANISHED = "vanished"
    """The scheduler no longer knows the app (``describe`` returned None)."""
    DEADLINE = "deadline"
    """The deadline passed with the app still running."""
    STARTUP = "startup"
    """The startup timeout passed with the app not started."""
    UNREACHABLE = "unreachable"
    """Status calls failed transiently for ``transient_timeout`` seconds."""


class Action(NamedTuple):
    """What the driver does next.

    Immutable (a named tuple, not a frozen dataclass: ~0.7 ms less of a ``torchx run`` start).

    Attributes:
        notify: hand the status to ``on_status`` (its state or message changed).
        fail_fast: call ``Runner.enforce_fail_fast`` (the app FAILED; once per follow).
        stop: the follow stops (None: it goes on).
        wait: seconds to wait (for a change) before the next status call, when not stopping.
        retry: the status call failed transiently: sleep ``wait`` then call again.
        reason: why, for ``Stop.STARTUP`` (with the scheduler's reason).
    """

    notify: bool = False
    fail_fast: bool = False
    stop: Optional[Stop] = None
    wait: float = 0.0
    retry: bool = False
    reason: str = ""


class Engine:
    """The follow state machine of one app.

    Args:
        now: the time the follow starts (``time.monotonic()``).
        deadline: the absolute deadline (same clock), None for none.
        startup_timeout: seconds from ``now`` by which the app must have started (None: no
            limit).
        wait_interval: the longest time between two status checks.
        transient_timeout: seconds status calls may fail transiently before the follow stops.
    """

    def __init__(
        self,
        now: float,
        *,
        deadline: Optional[float] = None,
        startup_timeout: Optional[float] = None,
        wait_interval: float = 5.0,
        transient_timeout: float = 300.0,
    ) -> None:
        if wait_interval <= 0:
            raise ValueError(f"`wait_interval` must be > 0 seconds, got {wait_interval}")
        if startup_timeout is not None and startup_timeout < 0:
            raise ValueError(f"`startup_timeout` must be >= 0 seconds, got {startup_timeout}")
        self.deadline = deadline
        self.startup_timeout = startup_timeout
        self.startup_deadline = None if startup_timeout is None else now + startup_timeout
        self.interval = wait_interval
        self.backoff = Backoff(transient_timeout)
        self.status: Optional[AppStatus] = None
        self.stopped: Optional[Stop] = None
        self.last_error: Optional[BaseException] = None
        self._seen: Optional[tuple[str, str]] = None
        self._fail_fast_done = False

    def step(self, status: Optional[AppStatus], now: float) -> Action:
        """The next action after ``Runner.status`` returned ``status`` at ``now``."""
        self.backoff.reset()
        self.last_error = None
        self.status = status
        notify = self._changed(status)
        fail_fast = False
        if status is not None and status.state.name == "FAILED" and not self._fail_fast_done:
            self._fail_fast_done = fail_fast = True
        if status is None:
            return self._stop(Stop.VANISHED, notify, fail_fast)
        if status.is_terminal():
            return self._stop(Stop.ENDED, notify, fail_fast)
        if self.deadline is not None and now >= self.deadline:
            return self._stop(Stop.DEADLINE, notify, fail_fast)
        if self._startup_expired(status, now):
            reason = not_started(status, self.startup_timeout)
            return self._stop(Stop.STARTUP, notify, fail_fast, reason)
        return Action(notify=notify, fail_fast=fail_fast, wait=self._wait(now))

    def failed(self, error: BaseException, now: float) -> Action:
        """The next action after a status call raised the transient ``error`` at ``now``."""
        self.last_error = error
        if self.deadline is not None and now >= self.deadline:
            return self._stop(Stop.DEADLINE)
        delay = self.backoff.failed(now)
        if delay is None:
            return self._stop(Stop.UNREACHABLE)
        if self.deadline is not None:
            delay = max(0.0, min(delay, self.deadline - now))
        return Action(retry=True, wait=delay)

    def fail_fast_failed(self) -> None:
        """``enforce_fail_fast`` failed transiently: ask for it again at the next FAILED status."""
        self._fail_fast_done = False

    def unreachable_seconds(self, now: float) -> float:
        """Seconds the status calls have been failing."""
        return self.backoff.elapsed(now)

    def _stop(
        self, why: Stop, notify: bool = False, fail_fast: bool = False, reason: str = ""
    ) -> Action:
        self.stopped = why
        return Action(notify=notify, fail_fast=fail_fast, stop=why, reason=reason)

    def _changed(self, status: Optional[AppStatus]) -> bool:
        if status is None:
            return False
        seen = (status.state.name, status.msg or "")
        if seen == self._seen:
            return False
        self._seen = seen
        return True

    def _startup_expired(self, status: AppStatus, now: float) -> bool:
        """Whether the startup timeout passed with the app not started (disarmed once started)."""
        if self.startup_deadline is None:
            return False
        if started(status):
            self.startup_deadline = None
            return False
        return now >= self.startup_deadline and starting(status)

    def _wait(self, now: float) -> float:
        ends = (self.deadline, self.startup_deadline, now + self.interval)
        return max(0.0, min(t for t in ends if t is not None) - now)
