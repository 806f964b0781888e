"""The follow layer for an event loop (private; public as ``torchx.runner.follow.afollow``).

:class:`AsyncFollower` drives the same :class:`~torchx.runner._follow_engine.Engine` as the
blocking ``Follower``: runner calls run in worker threads (``asyncio.to_thread``), waits are
``asyncio.sleep`` (cancellable), and ``on_log``/``on_status`` are called in the event loop, so
a caller's context (the Airflow triggerer routes a trigger's log records by context
variables) applies to them. A cancelled follow (``asyncio.CancelledError``: a triggerer
shutting down) stops its log threads and never cancels the app.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Optional

from torchx.runner._follow_core import CANCEL_WAIT, JOIN_TIMEOUT, FollowCore
from torchx.runner._follow_engine import Action, Stop
from torchx.runner._follow_result import FollowResult
from torchx.runner._follow_transient import DEFAULT_TRANSIENT_TIMEOUT, is_transient

if TYPE_CHECKING:
    from torchx.runner._follow_logs import Replica
    from torchx.runner.api import Runner
    from torchx.specs.api import AppDef, AppHandle, AppStatus

__all__ = ["AsyncFollower", "afollow"]

_DRAIN_EVERY = 0.5  # seconds between two deliveries of streamed lines to ``on_log``


class AsyncFollower(FollowCore):
    """Follows one app in an event loop (arguments as ``torchx.runner.follow.Follower``)."""

    _pending: collections.deque[str]

    async def run(self) -> FollowResult:
        """Follows the app to its end (or deadline) and returns the result.

        Raises:
            SchedulerUnreachableError: status calls failed transiently too long.
            BaseException: an error while following (the app is cancelled first when
                ``cancel_on_failure``, except on ``asyncio.CancelledError``).
        """
        self._pending = collections.deque()
        try:
            if self._on_log is not None:
                await asyncio.to_thread(self.replicas)
                self._make_streams(self._pending.append).start()
            await self._follow()
            await self._finish_logs()
            return await asyncio.to_thread(self._result)
        except asyncio.CancelledError:
            raise
        except BaseException as e:
            if self.cancel_on_failure:
                await asyncio.to_thread(self._cancel_quietly, e)
            raise
        finally:
            if self._streams is not None:
                self._streams.stop()

    async def _follow(self) -> None:
        while not self._ended:
            self._drain()
            action = await self._poll()
            if action.stop is not None:
                if action.stop is Stop.UNREACHABLE:
                    raise self._unreachable()
                if self._stopped(action):
                    await asyncio.to_thread(self._cancel)
                    await self._await_end()
                return
            await self._sleep(action.wait)

    async def _poll(self) -> Action:
        try:
            status = await asyncio.to_thread(self.runner.status, self.app_handle)
        except Exception as e:
            return self._status_failed(e)
        action = self._status_read(status)
        if action.fail_fast:
            try:
                await asyncio.to_thread(self.runner.enforce_fail_fast, self.app_handle)
            except Exception as e:
                self._fail_fast_failed(e)
        return action

    async def _sleep(self, seconds: float) -> None:
        """Sleeps ``seconds``, handing streamed lines to ``on_log`` meanwhile."""
        end = time.monotonic() + max(0.0, seconds)
        while True:
            self._drain()
            left = end - time.monotonic()
            if left <= 0:
                return
            await asyncio.sleep(min(left, _DRAIN_EVERY))

    def _drain(self) -> None:
        self._raise_callback_error()
        pending, on_log = self._pending, self._on_log
        while pending and on_log is not None:
            on_log(pending.popleft())

    async def _finish_logs(self) -> None:
        """Waits (``join_timeout`` per replica at most) for the streams to reach the end."""
        streams = self._streams
        if streams is None:
            return
        limit = time.monotonic() + self._join_timeout * max(1, len(self.replicas()))
        while time.monotonic() < limit:
            await asyncio.to_thread(streams.join, _DRAIN_EVERY)
            self._drain()
            if not streams.alive():
                break
        self._drain()

    async def _await_end(self) -> None:
        """Waits (up to a minute) for a cancelled app to reach a terminal state."""
        if not self._cancelled:
            return
        stop = time.monotonic() + CANCEL_WAIT
        while True:
            try:
                self._status = await asyncio.to_thread(self.runner.status, self.app_handle)
            except Exception as e:
                if not is_transient(e):
                    raise
            remaining = stop - time.monotonic()
            if self._status is None or self._status.is_terminal() or remaining <= 0:
                return
            await self._sleep(min(remaining, self._interval, 1.0))


async def afollow(
    runner: Runner,
    app_handle: AppHandle,
    *,
    on_log: Optional[Callable[[str], None]] = None,
    replicas: Optional[Sequence[Replica]] = None,
    app: Optional[AppDef] = None,
    log_prefix: str = "{role}/{replica} ",
    log_tail: int = 20,
    timeout: Optional[float] = None,
    deadline: Optional[float] = None,
    startup_timeout: Optional[float] = None,
    cancel_at_deadline: bool = True,
    cancel_on_failure: bool = True,
    wait_interval: float = 5.0,
    on_status: Optional[Callable[[AppStatus], None]] = None,
    transient_timeout: float = DEFAULT_TRANSIENT_TIMEOUT,
    log_skip: Optional[Mapping[str, int]] = None,
) -> FollowResult:
    """``follow`` for an event loop: the same arguments and rules, without blocking the loop.

    ``on_log`` and ``on_status`` are called in the event loop (log lines are handed over at
    least every 0.5 s). ``asyncio.CancelledError`` stops the follow without cancelling the app.

    Returns:
        How the app ended (:class:`~torchx.runner.follow.FollowResult`).

    Raises:
        SchedulerUnreachableError: status calls failed transiently for ``transient_timeout``
            seconds (the app is left as it is).
        BaseException: an error while following (the app is cancelled first when
            ``cancel_on_failure``), or whatever ``on_log``/``on_status`` raised.
    """
    if deadline is None and timeout is None:
        end = None
    else:
        ends = [d for d in (deadline, None if timeout is None else time.monotonic() + timeout)]
        end = min(d for d in ends if d is not None)
    follower = AsyncFollower(
        runner,
        app_handle,
        on_log=on_log,
        replicas=replicas,
        app=app,
        log_prefix=log_prefix,
        log_tail=log_tail,
        deadline=end,
        startup_timeout=startup_timeout,
        cancel_at_deadline=cancel_at_deadline,
        cancel_on_failure=cancel_on_failure,
        wait_interval=wait_interval,
        join_timeout=JOIN_TIMEOUT,
        on_status=on_status,
        transient_timeout=transient_timeout,
        log_skip=log_skip,
    )
    return await follower.run()
