"""Copies the end of each replica's log into the task log (after a deferred wait)."""

from __future__ import annotations

import collections
from collections.abc import Callable

from torchx.runner.api import Runner
from torchx.specs.api import AppStatus
from torchx.util.log_tee_helpers import replicas_of

__all__ = ["copy_tails"]


def copy_tails(
    runner: Runner, handle: str, status: AppStatus, sink: Callable[..., None], limit: int
) -> None:
    """Copies the last ``limit`` lines of each replica, ``[role/k]``-prefixed; never raises.

    The end of a log is what explains a failure (a traceback), so a longer log loses its
    beginning, and a line says how many lines were left out.
    """
    app = runner.describe(handle)
    for role, k in replicas_of(app, status):
        prefix = f"[{role}/{k}] "
        try:
            kept: collections.deque[str] = collections.deque(maxlen=limit)
            total = 0
            for line in runner.log_lines(handle, role, k):
                kept.append(line.rstrip("\r\n"))
                total += 1
        except Exception as e:  # a log problem is reported, never raised into the task
            sink("%s(logs unavailable: %s: %s)", prefix, type(e).__name__, e)
            continue
        if total > len(kept):
            sink("%s(%d earlier lines not copied)", prefix, total - len(kept))
        for line in kept:
            sink("%s%s", prefix, line)
