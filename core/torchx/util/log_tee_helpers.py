"""Stream the logs of every replica of an app, each line prefixed with ``{role}/{replica}``.

Used by ``torchx log`` and by ``torchx run`` when it streams the logs of the app it launched.
One thread reads each replica through ``Runner.log_lines``. The module imports the runner only
when :func:`tee_logs` has to create one.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional, TextIO

if TYPE_CHECKING:
    from torchx.runner import Runner
    from torchx.schedulers.api import Stream
    from torchx.specs.api import AppDef, AppHandle

__all__ = [
    "_find_role_replicas",
    "_prefix_line",
    "_start_threads_to_monitor_role_replicas",
    "tee_logs",
]

logger: logging.Logger = logging.getLogger(__name__)

_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")
_GREEN = "\033[32m"
_ENDC = "\033[0m"


def _prefix_line(prefix: str, line: str) -> str:
    r"""Returns ``line`` with ``prefix`` at its start and after each embedded line break.

    A carriage return (progress bars) starts a new visual line, so it gets the prefix too;
    the line's own trailing ``\\n`` does not start a new one.

    Args:
        prefix: e.g. ``"trainer/0 "``.
        line: one log line, usually ending with ``\\n``.
    """
    parts = _LINE_BREAK.split(line)
    out: list[str] = []
    for i in range(0, len(parts), 2):
        text = parts[i]
        brk = parts[i + 1] if i + 1 < len(parts) else ""
        if text or brk:
            out.append(f"{prefix}{text}{brk}" if text or brk != "\r" else brk)
    return "".join(out)


def _find_role_replicas(app: AppDef, role_name: Optional[str]) -> list[tuple[str, int]]:
    """Returns ``(role, replica_id)`` for every replica of ``role_name`` (or of every role).

    Args:
        app: the app (e.g. from ``Runner.describe``).
        role_name: a role name, or None for all roles.
    """
    return [
        (role.name, replica_id)
        for role in app.roles
        if role_name is None or role.name == role_name
        for replica_id in range(role.num_replicas)
    ]


def _print_log_lines(
    dst: TextIO,
    runner: Runner,
    app_handle: AppHandle,
    role_name: str,
    replica_id: int,
    regex: Optional[str],
    should_tail: bool,
    exceptions: list[BaseException],
    streams: Optional[Stream],
    colorize: bool = False,
) -> None:
    try:
        prefix = f"{role_name}/{replica_id} "
        if colorize:
            prefix = f"{_GREEN}{role_name}/{replica_id}{_ENDC} "
        for line in runner.log_lines(
            app_handle, role_name, replica_id, regex, should_tail=should_tail, streams=streams
        ):
            dst.write(_prefix_line(prefix, line))
            dst.flush()
    except Exception as e:  # reported by the caller that joins the threads
        exceptions.append(e)


def _start_threads_to_monitor_role_replicas(
    dst: TextIO,
    app_handle: AppHandle,
    regex: Optional[str],
    runner: Runner,
    replica_ids: Sequence[tuple[str, int]],
    should_tail: bool = False,
    streams: Optional[Stream] = None,
    colorize: bool = False,
) -> tuple[list[threading.Thread], list[BaseException]]:
    """Starts one daemon thread per replica that copies its log lines to ``dst``.

    Args:
        dst: where to write the prefixed lines.
        app_handle: the app.
        regex: keep only lines matching this regex (None: all).
        runner: the runner to read the logs through.
        replica_ids: the ``(role, replica_id)`` pairs to read.
        should_tail: keep reading until the app ends.
        streams: which stream to read (None: the scheduler's default).
        colorize: colour the prefixes.

    Returns:
        The started threads, and the list their exceptions are appended to.
    """
    exceptions: list[BaseException] = []
    threads = []
    for role_name, replica_id in replica_ids:
        thread = threading.Thread(
            target=_print_log_lines,
            args=(dst, runner, app_handle, role_name, replica_id, regex, should_tail),
            kwargs={"exceptions": exceptions, "streams": streams, "colorize": colorize},
            name=f"torchx-log-{role_name}-{replica_id}",
            daemon=True,
        )
        thread.start()
        threads.append(thread)
    return threads, exceptions


def tee_logs(
    dst: TextIO,
    app_handle: AppHandle,
    regex: Optional[str] = None,
    runner: Optional[Runner] = None,
    should_tail: bool = False,
    streams: Optional[Stream] = None,
    colorize: bool = False,
) -> threading.Thread:
    """Copies the logs of every replica of the app to ``dst`` in a background thread.

    Args:
        dst: where to write the ``{role}/{replica} ``-prefixed lines.
        app_handle: the app; it must exist (``Runner.describe`` gives its roles).
        regex: keep only lines matching this regex (None: all).
        runner: the runner to use (default: a new ``get_runner()``).
        should_tail: keep reading until the app ends.
        streams: which stream to read (None: the scheduler's default).
        colorize: colour the prefixes.

    Returns:
        The started daemon thread; it joins the per-replica threads and logs the first
        exception one of them raised (as a warning).

    Raises:
        ValueError: the app does not exist.
    """
    if runner is None:
        from torchx.runner import get_runner

        runner = get_runner()
    app = runner.describe(app_handle)
    if app is None:
        raise ValueError(f"app `{app_handle}` does not exist")
    replicas = _find_role_replicas(app, None)
    threads, exceptions = _start_threads_to_monitor_role_replicas(
        dst, app_handle, regex, runner, replicas, should_tail, streams, colorize
    )

    def join_all() -> None:
        for thread in threads:
            thread.join()
        if exceptions:
            logger.warning("failed to read the logs of %s: %s", app_handle, exceptions[0])

    waiter = threading.Thread(target=join_all, name="torchx-tee-logs", daemon=True)
    waiter.start()
    return waiter
