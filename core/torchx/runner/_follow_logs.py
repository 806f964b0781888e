"""Replica log streams of the follow layer: prefixed lines to a callback, a tail per replica.

:class:`LogStreams` runs one daemon thread per replica that reads ``Runner.log_lines`` (to
the end of the app) and keeps the last lines of every replica and how many lines of each it
delivered (:attr:`LogStreams.shown`). A read that fails with a transient error is opened
again after a back-off (for ``transient_timeout`` seconds) and goes on after the lines already
delivered, so nothing is shown twice; a replica whose logs cannot be read is reported with
one line and never stops the others. An exception raised by the caller's callback is kept in
:attr:`LogStreams.callback_error` (the follow loop re-raises it in the caller's thread).
:func:`read_tail` reads a tail after the app ended.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Optional

from torchx.runner._follow_transient import Backoff, is_transient
from torchx.util.log_tee_helpers import prefix_line

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.specs.api import AppHandle

__all__ = ["LogStreams", "Replica", "read_tail", "replica_key"]

Replica = tuple[str, int]
"""``(role name, replica id)``."""


def replica_key(replica: Replica) -> str:
    """Returns ``role/replica`` (the key of :attr:`FollowResult.tails`)."""
    return f"{replica[0]}/{replica[1]}"


class _Stopped(Exception):
    """Ends a replica thread after :meth:`LogStreams.stop`."""


class LogStreams:
    """Streams the logs of ``replicas`` to ``on_log`` and keeps each replica's last lines.

    Args:
        runner: the runner to read the logs through.
        app_handle: the app.
        replicas: the replicas to stream.
        on_log: called with each prefixed line (trailing line break stripped), in the replica
            threads.
        prefix: the prefix format, with ``{role}`` and ``{replica}``.
        tail: how many lines to keep per replica.
        skip: ``{"role/replica": n}``: the first ``n`` lines of a replica were shown already.
        transient_timeout: seconds a replica's log may fail to open (transiently) before it
            is reported unavailable.
    """

    def __init__(
        self,
        runner: Runner,
        app_handle: AppHandle,
        replicas: Sequence[Replica],
        on_log: Callable[[str], None],
        prefix: str,
        tail: int,
        *,
        skip: Optional[Mapping[str, int]] = None,
        transient_timeout: float = 300.0,
    ) -> None:
        self._runner = runner
        self._handle = app_handle
        self._replicas = list(replicas)
        self._on_log = on_log
        self._prefix = prefix
        self._transient_timeout = transient_timeout
        self.tails: dict[str, collections.deque[str]] = {
            replica_key(r): collections.deque(maxlen=max(tail, 0)) for r in self._replicas
        }
        self.shown: dict[str, int] = {
            replica_key(r): int((skip or {}).get(replica_key(r), 0)) for r in self._replicas
        }
        self.callback_error: Optional[BaseException] = None
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def start(self) -> LogStreams:
        """Starts one daemon thread per replica and returns self."""
        for role, k in self._replicas:
            thread = threading.Thread(
                target=self._follow_one, args=((role, k),), name=f"torchx-log-{role}-{k}"
            )
            thread.daemon = True
            thread.start()
            self._threads.append(thread)
        return self

    def join(self, timeout: Optional[float]) -> None:
        """Waits (at most ``timeout`` s per replica) for the streams to reach the log's end."""
        for thread in self._threads:
            thread.join(timeout)

    def alive(self) -> bool:
        """Whether a replica thread still reads."""
        return any(thread.is_alive() for thread in self._threads)

    def stop(self) -> None:
        """Stops delivering lines (each thread ends at its next line or retry)."""
        self._stop.set()

    def _follow_one(self, replica: Replica) -> None:
        key = replica_key(replica)
        prefix = self._prefix.format(role=replica[0], replica=replica[1])
        backoff = Backoff(self._transient_timeout)
        while not self._stop.is_set():
            try:
                self._read(replica, key, prefix, backoff)
                return
            except _Stopped:
                return
            except Exception as e:
                if self._stop.is_set():
                    return
                delay = backoff.failed() if is_transient(e) else None
                if delay is None:
                    self._report(prefix, e)
                    return
                self._stop.wait(delay)

    def _read(self, replica: Replica, key: str, prefix: str, backoff: Backoff) -> None:
        """Reads the replica's log from its start, delivering the lines not shown yet."""
        n = 0
        for line in self._runner.log_lines(self._handle, replica[0], replica[1], should_tail=True):
            backoff.reset()
            n += 1
            if n <= self.shown[key]:
                continue
            if self._stop.is_set():
                raise _Stopped()
            self._deliver(key, prefix, line)
            self.shown[key] = n

    def _deliver(self, key: str, prefix: str, line: str) -> None:
        text = prefix_line(prefix, line).rstrip("\r\n")
        self.tails[key].append(text[len(prefix) :] if text.startswith(prefix) else text)
        if self.callback_error is not None:
            raise _Stopped()  # the follow loop is already stopping
        try:
            self._on_log(text)
        except BaseException as e:  # handed to the follow loop
            self._keep(e)
            raise _Stopped() from None

    def _report(self, prefix: str, error: BaseException) -> None:
        try:
            self._on_log(f"{prefix}(logs unavailable: {type(error).__name__}: {error})")
        except BaseException as e:  # handed to the follow loop
            self._keep(e)

    def _keep(self, error: Optional[BaseException]) -> None:
        with self._lock:
            if self.callback_error is None:
                self.callback_error = error


def read_tail(
    runner: Runner, app_handle: AppHandle, replica: Replica, n: int, transient_timeout: float = 0.0
) -> list[str]:
    """Returns the last ``n`` log lines of an ended replica (line breaks stripped).

    A read that fails transiently is retried for ``transient_timeout`` seconds; a replica
    whose logs cannot be read gives one line saying so.
    """
    if n <= 0:
        return []
    backoff = Backoff(transient_timeout)
    while True:
        try:
            lines = runner.log_lines(app_handle, replica[0], replica[1])
            return [line.rstrip("\r\n") for line in collections.deque(lines, maxlen=n)]
        except Exception as e:  # a missing log never hides the app's own failure
            delay = backoff.failed() if is_transient(e) else None
            if delay is None:
                return [f"(logs unavailable: {type(e).__name__}: {e})"]
            time.sleep(delay)
