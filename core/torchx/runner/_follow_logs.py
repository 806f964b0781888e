"""Replica log streams of the follow layer: prefixed lines to a callback, a tail per replica.

:class:`LogStreams` runs one :class:`~torchx.util.log_tee_helpers.LogTee` per replica (a
daemon thread each) and keeps the last lines of every replica. An exception raised by the
caller's callback is kept in :attr:`LogStreams.callback_error` (the follow loop re-raises it in
the caller's thread); a replica whose logs cannot be read is reported through the callback and
never stops the others. :func:`read_tail` reads a tail after the app ended.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.specs.api import AppHandle
    from torchx.util.log_tee_helpers import LogTee

__all__ = ["LogStreams", "Replica", "read_tail", "replica_key"]

Replica = tuple[str, int]
"""``(role name, replica id)``."""


def replica_key(replica: Replica) -> str:
    """Returns ``role/replica`` (the key of :attr:`FollowResult.tails`)."""
    return f"{replica[0]}/{replica[1]}"


class _CallbackError(Exception):
    """Carries an exception of the caller's log callback out of ``LogTee``'s error handling."""


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
    """

    def __init__(
        self,
        runner: Runner,
        app_handle: AppHandle,
        replicas: Sequence[Replica],
        on_log: Callable[[str], None],
        prefix: str,
        tail: int,
    ) -> None:
        self._runner = runner
        self._handle = app_handle
        self._replicas = list(replicas)
        self._on_log = on_log
        self._prefix = prefix
        self.tails: dict[str, collections.deque[str]] = {
            replica_key(r): collections.deque(maxlen=max(tail, 0)) for r in self._replicas
        }
        self.callback_error: Optional[BaseException] = None
        self._tees: list[LogTee] = []
        self._lock = threading.Lock()

    def start(self) -> LogStreams:
        """Starts one daemon thread per replica and returns self."""
        from torchx.util.log_tee_helpers import LogTee

        for replica in self._replicas:
            tee = LogTee(
                self._runner,
                self._handle,
                self._sink(replica),
                replicas=[replica],
                prefix=self._prefix,
                on_error=self._log_error,
            )
            self._tees.append(tee.start())
        return self

    def join(self, timeout: Optional[float]) -> None:
        """Waits (at most ``timeout`` s per replica) for the streams to reach the log's end."""
        for tee in self._tees:
            tee.join(timeout)

    def _sink(self, replica: Replica) -> Callable[[str], None]:
        prefix = self._prefix.format(role=replica[0], replica=replica[1])
        tail = self.tails[replica_key(replica)]

        def sink(text: str) -> None:
            tail.append(text[len(prefix) :] if text.startswith(prefix) else text)
            if self.callback_error is not None:
                return  # the follow loop is already stopping
            try:
                self._on_log(text)
            except BaseException as e:  # handed to the follow loop
                raise _CallbackError() from e

        return sink

    def _log_error(self, role: str, k: int, error: BaseException) -> None:
        if isinstance(error, _CallbackError):
            self._keep(error.__cause__)
            return
        prefix = self._prefix.format(role=role, replica=k)
        try:
            self._on_log(f"{prefix}(logs unavailable: {type(error).__name__}: {error})")
        except BaseException as e:  # handed to the follow loop
            self._keep(e)

    def _keep(self, error: Optional[BaseException]) -> None:
        with self._lock:
            if self.callback_error is None:
                self.callback_error = error


def read_tail(runner: Runner, app_handle: AppHandle, replica: Replica, n: int) -> list[str]:
    """Returns the last ``n`` log lines of an ended replica (line breaks stripped).

    A replica whose logs cannot be read gives one line saying so.
    """
    if n <= 0:
        return []
    try:
        lines = runner.log_lines(app_handle, replica[0], replica[1])
        return [line.rstrip("\r\n") for line in collections.deque(lines, maxlen=n)]
    except Exception as e:  # a missing log never hides the app's own failure
        return [f"(logs unavailable: {type(e).__name__}: {e})"]
