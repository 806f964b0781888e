"""Reading a replica's log file line by line, optionally following it until the app ends."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

__all__ = ["iter_log_lines"]

_POLL = 0.05


def iter_log_lines(
    app_id: str,
    path: str,
    is_done: Callable[[], bool],
    should_tail: bool,
    pause: Callable[[float], object] = time.sleep,
) -> Iterator[str]:
    """Yield the lines of ``path`` (each keeping its newline).

    Waits for the file to appear. Without ``should_tail`` it stops at the end of the file;
    with it, it follows the file until ``is_done()`` and then reads what is left.

    Args:
        app_id: the app id (for messages).
        path: the log file.
        is_done: returns whether the app has ended.
        should_tail: follow the file until the app ends.
        pause: waits up to the given seconds between two reads at the end of the file; one
            that returns as soon as the app changes state ends a tail with the app, not up to
            a poll interval later.

    Raises:
        RuntimeError: the app ended without creating the file.
    """
    while not os.path.exists(path):
        if is_done():
            if os.path.exists(path):
                break
            raise RuntimeError(f"app: {app_id} finished without writing: {path}")
        pause(_POLL)
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        partial = ""
        while True:
            chunk = f.readline()
            if chunk:
                partial += chunk
                if partial.endswith("\n"):
                    yield partial
                    partial = ""
                continue
            if not should_tail:
                break
            if is_done():
                should_tail = False  # one more pass reads what was written before the end
                continue
            pause(_POLL)
        if partial:
            yield partial
