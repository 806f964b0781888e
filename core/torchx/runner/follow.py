"""Follow a submitted app: stream its logs, wait (with a deadline), report how it ended.

The one follow layer the CLI-side executor and every adapter share, after
:meth:`Runner.launch <torchx.runner.api.Runner.launch>`:

- **logs**: every replica's lines go to ``on_log`` prefixed with ``role/replica``; the last
  ``log_tail`` lines of each FAILED replica end up in :attr:`FollowResult.tails` (read from the
  stream, or from the logs after the end when nothing is streamed);
- **wait**: status checks wake on ``Runner.wait_for_change`` (at once on schedulers that
  observe changes), at most ``wait_interval`` seconds apart; an app seen FAILED gets
  ``Runner.enforce_fail_fast`` (its other replicas are stopped);
- **deadline**: ``timeout`` seconds or an absolute ``time.monotonic()`` ``deadline``; when it
  passes the app is cancelled (unless ``cancel_at_deadline=False``) and the result says so;
- **startup timeout**: ``startup_timeout`` seconds the app may take to start (from the start of
  the follow); an app still not started then is cancelled like at a deadline, and the result
  says why with the scheduler's reason (``AppStatus.msg``: e.g. a Kubernetes pod's
  ``ImagePullBackOff`` or ``0/1 nodes are available: 1 Insufficient cpu.``). Started means
  RUNNING with no replica still PENDING/SUBMITTED (or ended); a replica that restarts later
  does not count;
- **cancel on failure**: an exception or interruption while following (``KeyboardInterrupt``,
  ``SystemExit`` from a signal handler, an error raised by ``on_log``) cancels the app, then
  propagates (``cancel_on_failure=False`` keeps the app running);
- **status**: ``on_status`` gets each status whose state or message differs from the last one
  (e.g. a Kubernetes replica's ``ImagePullBackOff`` while the app is PENDING), in the caller's
  thread;
- **message**: :func:`failure_message` is the one text a failed app is reported with.

Example::

    from torchx.runner import get_runner
    from torchx.runner.follow import follow
    from torchx.runner.launch import LaunchRequest

    with get_runner() as runner:
        handle = runner.launch(LaunchRequest(component="utils.echo"))
        result = follow(runner, handle, on_log=print, timeout=600)
        if not result.succeeded:
            raise SystemExit(result.failure_message())

:class:`Follower` is the same in steps (``with Follower(...) as f: f.wait(1.0); ...
f.result()``) for callers that act while the app runs (the Airflow operator records the handle).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Optional

from torchx.runner._follow_logs import LogStreams, Replica, read_tail, replica_key
from torchx.runner._follow_result import FollowResult, failure_message
from torchx.runner._follow_startup import not_started, started, starting

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.specs.api import AppDef, AppHandle, AppStatus

__all__ = [
    "FollowResult",
    "Follower",
    "LogCallback",
    "StatusCallback",
    "failure_message",
    "follow",
]

LogCallback = Callable[[str], None]
"""Receives each prefixed log line (without its line break)."""

StatusCallback = Callable[["AppStatus"], None]
"""Receives each status whose state or message changed (the first one too)."""

logger: logging.Logger = logging.getLogger(__name__)

DEFAULT_LOG_TAIL = 20
_CANCEL_WAIT = 60.0  # longest wait for a cancelled app to reach a terminal state
_JOIN_TIMEOUT = 10.0  # seconds per replica for the log streams to reach the end


class Follower:
    """Follows one app; use it as a context manager (an exception inside cancels the app).

    Args:
        runner: the runner the app was launched with (any runner that knows its scheduler).
        app_handle: the app.
        on_log: called with each ``role/replica``-prefixed log line, in log threads (None:
            no streaming; tails are read after the end).
        replicas: the replicas to stream, ``(role, replica id)``; None: those of ``app``,
            else of ``Runner.describe``.
        app: the app's AppDef, when the caller has it (saves a describe).
        log_prefix: the prefix format, with ``{role}`` and ``{replica}``.
        log_tail: how many last lines of each failed replica to keep (0: none).
        timeout: seconds from now after which the deadline passes.
        deadline: an absolute ``time.monotonic()`` deadline (the earlier of the two wins).
        startup_timeout: seconds from now by which the app must have started (see the
            module docstring); None: no limit.
        cancel_at_deadline: cancel the app when the deadline or the startup timeout passes
            (else keep it running).
        cancel_on_failure: cancel the app when an exception leaves the ``with`` block (or
            :func:`follow`), then let it propagate.
        wait_interval: the longest time between two status checks, in seconds (also the
            longest delay before an error raised by ``on_log`` stops the follow).
        join_timeout: seconds per replica for the log streams to reach the end.
        on_status: called (in the caller's thread) with each status whose state or message
            differs from the previous one; what it raises propagates like an interruption.
    """

    def __init__(
        self,
        runner: Runner,
        app_handle: AppHandle,
        *,
        on_log: Optional[LogCallback] = None,
        replicas: Optional[Sequence[Replica]] = None,
        app: Optional[AppDef] = None,
        log_prefix: str = "{role}/{replica} ",
        log_tail: int = DEFAULT_LOG_TAIL,
        timeout: Optional[float] = None,
        deadline: Optional[float] = None,
        startup_timeout: Optional[float] = None,
        cancel_at_deadline: bool = True,
        cancel_on_failure: bool = True,
        wait_interval: float = 5.0,
        join_timeout: float = _JOIN_TIMEOUT,
        on_status: Optional[StatusCallback] = None,
    ) -> None:
        if wait_interval <= 0:
            raise ValueError(f"`wait_interval` must be > 0 seconds, got {wait_interval}")
        if startup_timeout is not None and startup_timeout < 0:
            raise ValueError(f"`startup_timeout` must be >= 0 seconds, got {startup_timeout}")
        self.runner = runner
        self.app_handle = app_handle
        self._on_log = on_log
        self._replicas = list(replicas) if replicas is not None else None
        self._app = app
        self._prefix = log_prefix
        self._tail = max(0, log_tail)
        self._deadline = _earliest(deadline, timeout)
        self._startup_timeout = startup_timeout
        self._startup_deadline = _earliest(None, startup_timeout)
        self._startup_reason = ""
        self._on_status = on_status
        self._seen: Optional[tuple[str, str]] = None
        self._cancel_at_deadline = cancel_at_deadline
        self.cancel_on_failure = cancel_on_failure
        self._interval = wait_interval
        self._join_timeout = join_timeout
        self._streams: Optional[LogStreams] = None
        self._status: Optional[AppStatus] = None
        self._ended = False
        self._fail_fast_done = False
        self._expired = False
        self._cancelled = False

    # ------------------------------------------------------------------ context

    def __enter__(self) -> Follower:
        return self.start()

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if exc is not None and self.cancel_on_failure:
            self._cancel_quietly(exc)  # a no-op for an app that already ended

    def start(self) -> Follower:
        """Starts the log streams (when ``on_log`` is set) and returns self."""
        if self._on_log is not None and self._streams is None:
            self._streams = LogStreams(
                self.runner,
                self.app_handle,
                self.replicas(),
                self._on_log,
                self._prefix,
                self._tail,
            ).start()
        return self

    def replicas(self) -> list[Replica]:
        """Returns the replicas to stream (from the app, else described; cached)."""
        if self._replicas is None:
            from torchx.util.log_tee_helpers import replicas_of

            app = self._app if self._app is not None else self.runner.describe(self.app_handle)
            self._replicas = replicas_of(app, None if app is not None else self._status)
        return list(self._replicas)

    # ------------------------------------------------------------------ waiting

    def wait(self, seconds: Optional[float] = None) -> bool:
        """Follows the app for at most ``seconds`` (None: until it ends or the deadline).

        Returns:
            True once the app ended, vanished, or its deadline passed (see :meth:`result`).

        Raises:
            BaseException: whatever ``on_log`` raised (the ``with`` block then cancels).
        """
        until = None if seconds is None else time.monotonic() + seconds
        while not self._ended:
            self._raise_callback_error()
            status = self.runner.status(self.app_handle)
            self._status = status
            self._notify(status)
            if status is not None and status.state.name == "FAILED" and not self._fail_fast_done:
                self._fail_fast_done = True
                self.runner.enforce_fail_fast(self.app_handle)
            if status is None or status.is_terminal():
                self._ended = True
                break
            now = time.monotonic()
            if self._deadline is not None and now >= self._deadline:
                self._expire()
                break
            if self._startup_expired(status, now):
                self._expire(not_started(status, self._startup_timeout))
                break
            if until is not None and now >= until:
                return False
            ends = (until, self._deadline, self._startup_deadline, now + self._interval)
            limit = min(t for t in ends if t is not None)
            self.runner.wait_for_change(self.app_handle, max(0.0, limit - now))
        return True

    def result(self) -> FollowResult:
        """Follows the app to its end (or deadline), finishes the logs, returns the result."""
        self.wait()
        if self._streams is not None:
            self._streams.join(self._join_timeout)
        self._raise_callback_error()
        return FollowResult(
            self.app_handle,
            self._status,
            self._tails(),
            deadline_expired=self._expired and not self._startup_reason,
            cancelled=self._cancelled,
            startup_reason=self._startup_reason,
        )

    # ------------------------------------------------------------------ internals

    def _raise_callback_error(self) -> None:
        error = self._streams.callback_error if self._streams is not None else None
        if error is not None:
            raise error

    def _notify(self, status: Optional[AppStatus]) -> None:
        if self._on_status is None or status is None:
            return
        seen = (status.state.name, status.msg or "")
        if seen != self._seen:
            self._seen = seen
            self._on_status(status)

    def _startup_expired(self, status: AppStatus, now: float) -> bool:
        """Whether the startup timeout passed with the app not started (disarmed once started)."""
        if self._startup_deadline is None:
            return False
        if started(status):
            self._startup_deadline = None
            return False
        return now >= self._startup_deadline and starting(status)

    def _expire(self, startup_reason: str = "") -> None:
        """A deadline passed: cancel the app (unless kept) and wait for it to stop.

        Args:
            startup_reason: why the app is not started ("" for the overall deadline).
        """
        self._expired = True
        self._ended = True
        self._startup_reason = startup_reason
        if not self._cancel_at_deadline:
            return
        which = "startup timeout" if startup_reason else "deadline"
        logger.info("%s passed: cancelling TorchX app %s", which, self.app_handle)
        self.runner.cancel(self.app_handle)
        self._cancelled = True
        stop = time.monotonic() + _CANCEL_WAIT
        while True:
            self._status = self.runner.status(self.app_handle)
            remaining = stop - time.monotonic()
            if self._status is None or self._status.is_terminal() or remaining <= 0:
                return
            self.runner.wait_for_change(self.app_handle, min(remaining, self._interval))

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
        for replica in self._failed_replicas():
            key = replica_key(replica)
            streamed = self._streams.tails.get(key) if self._streams is not None else None
            if streamed is not None:
                out[key] = list(streamed)
            else:
                out[key] = read_tail(self.runner, self.app_handle, replica, self._tail)
        return out

    def _cancel_quietly(self, exc: BaseException) -> None:
        logger.info(
            "cancelling TorchX app %s: %s while following it", self.app_handle, type(exc).__name__
        )
        try:
            self.runner.cancel(self.app_handle)
            self._cancelled = True
        except Exception as e:  # the original exception is what the caller must see
            logger.warning("could not cancel TorchX app %s: %s", self.app_handle, e)


def follow(
    runner: Runner,
    app_handle: AppHandle,
    *,
    on_log: Optional[LogCallback] = None,
    replicas: Optional[Sequence[Replica]] = None,
    app: Optional[AppDef] = None,
    log_prefix: str = "{role}/{replica} ",
    log_tail: int = DEFAULT_LOG_TAIL,
    timeout: Optional[float] = None,
    deadline: Optional[float] = None,
    startup_timeout: Optional[float] = None,
    cancel_at_deadline: bool = True,
    cancel_on_failure: bool = True,
    wait_interval: float = 5.0,
    on_status: Optional[StatusCallback] = None,
) -> FollowResult:
    """Follows an app to its end (or deadline); see :class:`Follower` for the arguments.

    Returns:
        How the app ended: status, tails of the failed replicas, deadline and cancel flags.

    Raises:
        BaseException: an exception or interruption while following (the app is cancelled
            first when ``cancel_on_failure``), or whatever ``on_log`` raised.
    """
    with Follower(
        runner,
        app_handle,
        on_log=on_log,
        replicas=replicas,
        app=app,
        log_prefix=log_prefix,
        log_tail=log_tail,
        timeout=timeout,
        deadline=deadline,
        startup_timeout=startup_timeout,
        cancel_at_deadline=cancel_at_deadline,
        cancel_on_failure=cancel_on_failure,
        wait_interval=wait_interval,
        on_status=on_status,
    ) as follower:
        return follower.result()


def _earliest(deadline: Optional[float], timeout: Optional[float]) -> Optional[float]:
    if timeout is not None:
        deadline = min(d for d in (deadline, time.monotonic() + timeout) if d is not None)
    return deadline
