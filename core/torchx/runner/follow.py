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
- **transient errors**: a status or log call that fails with a transient error (connection
  refused/reset, timeouts, Kubernetes 5xx/429, a Docker engine or slurmctld not answering:
  :func:`is_transient`) is retried with back-off for ``transient_timeout`` seconds (default
  300) before it counts; then the follow raises :class:`SchedulerUnreachableError` and leaves
  the app as it is. Only a definitive answer (a terminal state, the app gone) ends a follow;
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
:func:`afollow` is the same follow for an event loop (the Airflow trigger): same arguments, same
rules, ``on_log`` and ``on_status`` called in the loop. Both drive one state machine,
:meth:`Follower.step` (``status, now -> Action``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Optional

from torchx.runner._follow_core import CANCEL_WAIT, JOIN_TIMEOUT, FollowCore
from torchx.runner._follow_engine import Action, Stop
from torchx.runner._follow_logs import Replica
from torchx.runner._follow_result import FollowResult, failure_message
from torchx.runner._follow_startup import status_message
from torchx.runner._follow_transient import (
    DEFAULT_TRANSIENT_TIMEOUT,
    SchedulerUnreachableError,
    is_transient,
)

if TYPE_CHECKING:
    from torchx.runner._follow_async import afollow
    from torchx.runner.api import Runner
    from torchx.specs.api import AppDef, AppHandle, AppStatus

__all__ = [
    "DEFAULT_TRANSIENT_TIMEOUT",
    "Action",
    "FollowResult",
    "Follower",
    "LogCallback",
    "SchedulerUnreachableError",
    "StatusCallback",
    "Stop",
    "afollow",
    "failure_message",
    "follow",
    "is_transient",
    "status_message",
]

LogCallback = Callable[[str], None]
"""Receives each prefixed log line (without its line break)."""

StatusCallback = Callable[["AppStatus"], None]
"""Receives each status whose state or message changed (the first one too)."""

DEFAULT_LOG_TAIL = 20


class Follower(FollowCore):
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
            :func:`follow`), then let it propagate (never for
            :class:`SchedulerUnreachableError`: the app may be healthy).
        wait_interval: the longest time between two status checks, in seconds (also the
            longest delay before an error raised by ``on_log`` stops the follow).
        join_timeout: seconds per replica for the log streams to reach the end.
        on_status: called (in the caller's thread) with each status whose state or message
            differs from the previous one; what it raises propagates like an interruption.
        transient_timeout: seconds a status or log call may keep failing with transient
            errors (:func:`is_transient`) before it counts (retried with back-off meanwhile).
        log_skip: ``{"role/replica": n}``: the first ``n`` lines of those replicas were shown
            already (e.g. by a trigger); streaming starts after them.
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
        join_timeout: float = JOIN_TIMEOUT,
        on_status: Optional[StatusCallback] = None,
        transient_timeout: float = DEFAULT_TRANSIENT_TIMEOUT,
        log_skip: Optional[Mapping[str, int]] = None,
    ) -> None:
        super().__init__(
            runner,
            app_handle,
            on_log=on_log,
            replicas=replicas,
            app=app,
            log_prefix=log_prefix,
            log_tail=log_tail,
            deadline=_earliest(deadline, timeout),
            startup_timeout=startup_timeout,
            cancel_at_deadline=cancel_at_deadline,
            cancel_on_failure=cancel_on_failure,
            wait_interval=wait_interval,
            join_timeout=join_timeout,
            on_status=on_status,
            transient_timeout=transient_timeout,
            log_skip=log_skip,
        )

    # ------------------------------------------------------------------ context

    def __enter__(self) -> Follower:
        return self.start()

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if self._streams is not None:
            self._streams.stop()
        if exc is not None and self.cancel_on_failure:
            self._cancel_quietly(exc)  # a no-op for an app that already ended

    def start(self) -> Follower:
        """Starts the log streams (when ``on_log`` is set) and returns self."""
        if self._on_log is not None and self._streams is None:
            self._make_streams(self._on_log).start()
        return self

    # ------------------------------------------------------------------ waiting

    def wait(self, seconds: Optional[float] = None) -> bool:
        """Follows the app for at most ``seconds`` (None: until it ends or the deadline).

        Returns:
            True once the app ended, vanished, or its deadline passed (see :meth:`result`).

        Raises:
            SchedulerUnreachableError: status calls failed transiently for
                ``transient_timeout`` seconds.
            BaseException: whatever ``on_log`` raised (the ``with`` block then cancels).
        """
        until = None if seconds is None else time.monotonic() + seconds
        while not self._ended:
            self._raise_callback_error()
            action = self._poll()
            if action.stop is not None:
                if action.stop is Stop.UNREACHABLE:
                    raise self._unreachable()
                if self._stopped(action):
                    self._cancel()
                    self._await_end()
                break
            now = time.monotonic()
            if until is not None and now >= until:
                return False
            delay = action.wait if until is None else min(action.wait, until - now)
            if action.retry:
                time.sleep(delay)
            else:
                self._wait_for_change(delay)
        return True

    def result(self) -> FollowResult:
        """Follows the app to its end (or deadline), finishes the logs, returns the result."""
        self.wait()
        if self._streams is not None:
            self._streams.join(self._join_timeout)
        self._raise_callback_error()
        return self._result()

    # ------------------------------------------------------------------ internals

    def _poll(self) -> Action:
        """One status call fed to the engine; carries out ``on_status`` and fail-fast."""
        try:
            status = self.runner.status(self.app_handle)
        except Exception as e:
            return self._status_failed(e)
        action = self._status_read(status)
        if action.fail_fast:
            try:
                self.runner.enforce_fail_fast(self.app_handle)
            except Exception as e:
                self._fail_fast_failed(e)
        return action

    def _wait_for_change(self, seconds: float) -> None:
        try:
            self.runner.wait_for_change(self.app_handle, max(0.0, seconds))
        except Exception as e:  # the next status call retries (and counts) the error
            if not is_transient(e):
                raise
            time.sleep(min(max(0.0, seconds), 1.0))

    def _await_end(self) -> None:
        """Waits (up to a minute) for a cancelled app to reach a terminal state."""
        if not self._cancelled:
            return
        stop = time.monotonic() + CANCEL_WAIT
        while True:
            try:
                self._status = self.runner.status(self.app_handle)
            except Exception as e:
                if not is_transient(e):
                    raise
            remaining = stop - time.monotonic()
            if self._status is None or self._status.is_terminal() or remaining <= 0:
                return
            self._wait_for_change(min(remaining, self._interval))


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
    transient_timeout: float = DEFAULT_TRANSIENT_TIMEOUT,
    log_skip: Optional[Mapping[str, int]] = None,
) -> FollowResult:
    """Follows an app to its end (or deadline); see :class:`Follower` for the arguments.

    Returns:
        How the app ended: status, tails of the failed replicas, deadline and cancel flags.

    Raises:
        SchedulerUnreachableError: status calls failed transiently for ``transient_timeout``
            seconds (the app is left as it is).
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
        transient_timeout=transient_timeout,
        log_skip=log_skip,
    ) as follower:
        return follower.result()


def _earliest(deadline: Optional[float], timeout: Optional[float]) -> Optional[float]:
    if timeout is not None:
        deadline = min(d for d in (deadline, time.monotonic() + timeout) if d is not None)
    return deadline


def __getattr__(name: str) -> object:
    """Imports ``afollow`` on first use (``asyncio`` is not needed by ``torchx run``)."""
    if name == "afollow":
        from torchx.runner._follow_async import afollow  # lazy: asyncio, ~10 ms: the trigger only

        return afollow
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
