"""What the blocking and the async follow drivers share (private): options, engine, result.

:class:`FollowCore` holds one follow's options and its state machine (``_follow_engine``),
finds the replicas to stream, logs transient failures and recoveries, and builds the
:class:`~torchx.runner._follow_result.FollowResult`. The drivers (``follow.Follower`` and
``_follow_async.AsyncFollower``) only add how they call the runner and wait.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Optional

from torchx.runner._follow_engine import Action, Engine, Stop
from torchx.runner._follow_logs import LogStreams, Replica, read_tail, replica_key
from torchx.runner._follow_result import FollowResult
from torchx.runner._follow_transient import (
    SchedulerUnreachableError,
    is_transient,
    retry_transient,
    unreachable,
)
from torchx.util.log_tee_helpers import replicas_of

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.specs.api import AppDef, AppHandle, AppStatus

__all__ = ["CANCEL_WAIT", "FollowCore", "JOIN_TIMEOUT", "TAIL_RETRY"]

logger: logging.Logger = logging.getLogger("torchx.runner.follow")

CANCEL_WAIT = 60.0  # longest wait for a cancelled app to reach a terminal state
JOIN_TIMEOUT = 10.0  # seconds per replica for the log streams to reach the end
TAIL_RETRY = 30.0  # longest retry of a tail read after the end


class FollowCore:
    """One follow's options, engine and result (see ``follow.Follower`` for the arguments)."""

    def __init__(
        self,
        runner: Runner,
        app_handle: AppHandle,
        *,
        on_log: Optional[Callable[[str], None]],
        replicas: Optional[Sequence[Replica]],
        app: Optional[AppDef],
        log_prefix: str,
        log_tail: int,
        deadline: Optional[float],
        startup_timeout: Optional[float],
        cancel_at_deadline: bool,
        cancel_on_failure: bool,
        wait_interval: float,
        join_timeout: float,
        on_status: Optional[Callable[[AppStatus], None]],
        transient_timeout: float,
        log_skip: Optional[Mapping[str, int]],
    ) -> None:
        if transient_timeout < 0:
            raise ValueError(f"`transient_timeout` must be >= 0 seconds, got {transient_timeout}")
        self.runner = runner
        self.app_handle = app_handle
        self.engine = Engine(
            time.monotonic(),
            deadline=deadline,
            startup_timeout=startup_timeout,
            wait_interval=wait_interval,
            transient_timeout=transient_timeout,
        )
        self._on_log = on_log
        self._replicas = list(replicas) if replicas is not None else None
        self._app = app
        self._prefix = log_prefix
        self._tail = max(0, log_tail)
        self._on_status = on_status
        self._cancel_at_deadline = cancel_at_deadline
        self.cancel_on_failure = cancel_on_failure
        self._interval = wait_interval
        self._join_timeout = join_timeout
        self._transient_timeout = transient_timeout
        self._log_skip = dict(log_skip or {})
        self._streams: Optional[LogStreams] = None
        self._status: Optional[AppStatus] = None
        self._ended = False
        self._expired = False
        self._startup_reason = ""
        self._cancelled = False

    @property
    def logs_shown(self) -> dict[str, int]:
        """``{"role/replica": n}``: how many log lines of each replica were delivered so far."""
        shown = dict(self._log_skip)
        if self._streams is not None:
            shown.update(self._streams.shown)
        return shown

    def step(self, status: Optional[AppStatus], now: float) -> Action:
        """The next action after ``Runner.status`` returned ``status`` at ``now``."""
        return self.engine.step(status, now)

    def replicas(self) -> list[Replica]:
        """Returns the replicas to stream (from the app, else described; cached)."""
        if self._replicas is None:
            app = self._app
            if app is None:
                app = retry_transient(
                    lambda: self.runner.describe(self.app_handle),
                    app_handle=self.app_handle,
                    what="describe",
                    timeout=self._transient_timeout,
                )
            self._replicas = replicas_of(app, None if app is not None else self._status)
        return list(self._replicas)

    def _make_streams(self, on_log: Callable[[str], None]) -> LogStreams:
        self._streams = LogStreams(
            self.runner,
            self.app_handle,
            self.replicas(),
            on_log,
            self._prefix,
            self._tail,
            skip=self._log_skip,
            transient_timeout=self._transient_timeout,
        )
        return self._streams

    def _raise_callback_error(self) -> None:
        error = self._streams.callback_error if self._streams is not None else None
        if error is not None:
            raise error

    def _status_seen(self, status: Optional[AppStatus], now: float) -> Action:
        """Feeds a status to the engine, logging a recovery from transient failures."""
        failing = self.engine.unreachable_seconds(now)
        if failing:
            logger.info(
                "reached the scheduler of %s again after %.0fs of errors", self.app_handle, failing
            )
        self._status = status
        return self.engine.step(status, now)

    def _call_failed(self, error: Exception, now: float) -> Action:
        """Feeds a transient failure of a status call to the engine (logged once per period)."""
        action = self.engine.failed(error, now)
        if self.engine.backoff.failures == 1:
            logger.warning(
                "could not read the status of %s (%s: %s): retrying for up to %.0fs",
                self.app_handle,
                type(error).__name__,
                error,
                self._transient_timeout,
            )
        return action

    def _status_read(self, status: Optional[AppStatus]) -> Action:
        """A status call's answer: fed to the engine, handed to ``on_status`` when it changed."""
        action = self._status_seen(status, time.monotonic())
        if action.notify and self._on_status is not None and status is not None:
            self._on_status(status)
        return action

    def _status_failed(self, error: Exception) -> Action:
        """A status call raised: a transient error counts toward the bound, others propagate."""
        if not is_transient(error):
            raise error
        return self._call_failed(error, time.monotonic())

    def _fail_fast_failed(self, error: Exception) -> None:
        """``enforce_fail_fast`` raised: retried at the next poll if transient, else propagated."""
        if not is_transient(error):
            raise error
        self.engine.fail_fast_failed()

    def _unreachable(self) -> SchedulerUnreachableError:
        error = self.engine.last_error or RuntimeError("no answer")
        seconds = self.engine.unreachable_seconds(time.monotonic())
        return unreachable(self.app_handle, "read the status of", error, seconds)

    def _stopped(self, action: Action) -> bool:
        """Records why the follow stops; True when the app must be cancelled (a deadline)."""
        self._ended = True
        if action.stop in (Stop.DEADLINE, Stop.STARTUP):
            self._expired = True
            self._startup_reason = action.reason
            return self._cancel_at_deadline
        return False

    def _cancel(self) -> None:
        """Cancels the app at a deadline (retried while transient); a failure is logged."""
        which = "startup timeout" if self._startup_reason else "deadline"
        logger.info("%s passed: cancelling TorchX app %s", which, self.app_handle)
        try:
            retry_transient(
                lambda: self.runner.cancel(self.app_handle),
                app_handle=self.app_handle,
                what="cancel",
                timeout=min(self._transient_timeout, CANCEL_WAIT),
            )
            self._cancelled = True
        except SchedulerUnreachableError as e:
            logger.warning("%s", e)

    def _cancel_quietly(self, exc: BaseException) -> None:
        """Cancels the app after ``exc`` left the follow (never for an unreachable scheduler)."""
        if isinstance(exc, SchedulerUnreachableError):
            return  # the app's state is unknown: it may be healthy
        logger.info(
            "cancelling TorchX app %s: %s while following it", self.app_handle, type(exc).__name__
        )
        try:
            self.runner.cancel(self.app_handle)
            self._cancelled = True
        except Exception as e:  # the original exception is what the caller must see
            logger.warning("could not cancel TorchX app %s: %s", self.app_handle, e)

    def _failed_replicas(self) -> list[Replica]:
        status = self._status
        if status is None or status.state.name != "FAILED":
            return []
        failed = [
            (rs.role, rep.id)
            for rs in status.roles
            for rep in rs.replicas
            if rep.state.name == "FAILED"
        ]
        if failed:
            return failed
        try:  # no per-replica states: every replica of the app (one describe at most)
            return self.replicas()
        except Exception as e:  # a missing tail never hides the app's own failure
            logger.warning("could not find the replicas of %s: %s", self.app_handle, e)
            return []

    def _tails(self) -> dict[str, list[str]]:
        if self._tail == 0:
            return {}
        out: dict[str, list[str]] = {}
        retry = min(self._transient_timeout, TAIL_RETRY)
        for replica in self._failed_replicas():
            key = replica_key(replica)
            streamed = self._streams.tails.get(key) if self._streams is not None else None
            whole = not self._log_skip.get(key)  # else the stream saw only the log's end
            if streamed and (whole or len(streamed) >= self._tail):
                out[key] = list(streamed)
            else:
                out[key] = read_tail(self.runner, self.app_handle, replica, self._tail, retry)
        return out

    def _result(self) -> FollowResult:
        return FollowResult(
            self.app_handle,
            self._status,
            self._tails(),
            deadline_expired=self._expired and not self._startup_reason,
            cancelled=self._cancelled,
            startup_reason=self._startup_reason,
            logs_shown=self.logs_shown,
        )
