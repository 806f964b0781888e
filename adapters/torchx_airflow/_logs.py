"""Copies replica logs into the Airflow task log, live while waiting or all at once at the end."""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.specs.api import AppDef, AppStatus

__all__ = ["LogStreamer", "dump_logs", "replicas"]

Emit = Callable[[str], None]
logger: logging.Logger = logging.getLogger(__name__)


def replicas(app: Optional[AppDef], status: Optional[AppStatus]) -> list[tuple[str, int]]:
    """Returns ``(role, replica id)`` pairs from the app's roles, else from its status."""
    if app is not None and app.roles:
        return [(r.name, k) for r in app.roles for k in range(r.num_replicas)]
    if status is not None:
        return [(rs.role, rep.id) for rs in status.roles for rep in rs.replicas]
    return []


def _copy(lines: Iterable[str], prefix: str, emit: Emit, limit: Optional[int] = None) -> None:
    for line in itertools.islice(lines, limit):
        emit(f"{prefix} {line.rstrip()}")


class LogStreamer:
    """Tails every replica's log in a daemon thread and emits each line with a ``[role/k]`` prefix.

    Schedulers that cannot serve logs are reported once and skipped; log streaming never
    fails the task.

    Args:
        runner: the runner that launched or found the app.
        app_handle: the app handle.
        targets: ``(role, replica id)`` pairs to follow.
        emit: where lines go (the task logger's ``info``).
    """

    def __init__(
        self, runner: Runner, app_handle: str, targets: list[tuple[str, int]], emit: Emit
    ) -> None:
        self._runner = runner
        self._handle = app_handle
        self._emit = emit
        self._threads = [
            threading.Thread(
                target=self._follow, args=(role, k), name=f"torchx-log-{role}-{k}", daemon=True
            )
            for role, k in targets
        ]

    def start(self) -> LogStreamer:
        """Starts one thread per replica and returns self."""
        for thread in self._threads:
            thread.start()
        return self

    def join(self, timeout: float = 10.0) -> None:
        """Waits (at most ``timeout`` s per thread) for the tails to reach the end of the logs."""
        for thread in self._threads:
            thread.join(timeout)

    def _follow(self, role: str, k: int) -> None:
        try:
            lines = self._runner.log_lines(self._handle, role, k, should_tail=True)
            _copy(lines, f"[{role}/{k}]", self._emit)
        except Exception as e:  # a log problem must never fail the task
            self._emit(f"[{role}/{k}] (logs unavailable: {type(e).__name__}: {e})")


def dump_logs(
    runner: Runner,
    app_handle: str,
    targets: list[tuple[str, int]],
    emit: Emit,
    limit: int = 2000,
) -> None:
    """Emits the (first ``limit``) log lines of each replica of a finished app."""
    for role, k in targets:
        try:
            _copy(runner.log_lines(app_handle, role, k), f"[{role}/{k}]", emit, limit)
        except Exception as e:  # a log problem must never fail the task
            emit(f"[{role}/{k}] (logs unavailable: {type(e).__name__}: {e})")
