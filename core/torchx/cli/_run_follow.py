"""How ``torchx run`` follows the app it waits for (private): :func:`follow_app`."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from torchx.runner import Runner
    from torchx.runner.follow import FollowResult
    from torchx.specs.api import AppStatus

__all__ = ["LOG_TAIL", "follow_app"]

logger: logging.Logger = logging.getLogger("torchx.cli.cmd_run")

LOG_TAIL = 20
"""Last lines of each failed replica at the end of the output."""


def follow_app(
    runner: Runner, app_handle: str, log: bool, startup_timeout: Optional[float]
) -> FollowResult:
    """Follows the app to its end with :func:`torchx.runner.follow.follow`.

    Args:
        runner: the runner that launched it.
        app_handle: the app.
        log: stream its logs to stderr (``role/replica`` prefixes, green on a terminal).
        startup_timeout: seconds the app may take to start (None: no limit).

    Returns:
        How it ended; each new reason it gave while running was logged (INFO).
    """
    from torchx.runner.follow import follow  # lazy: the follow layer, ~2.5 ms: while the app starts

    return follow(
        runner,
        app_handle,
        on_log=_print_to_stderr if log else None,
        log_prefix=_log_prefix(colorize=sys.stderr.isatty()),
        log_tail=LOG_TAIL,
        startup_timeout=startup_timeout,
        cancel_on_failure=False,  # the command cancels on a signal (and exits 130/143)
        wait_interval=1,
        on_status=_StatusLog(app_handle),
    )


class _StatusLog:
    """Logs each new reason a running app gives (e.g. why a replica is not running yet)."""

    def __init__(self, app_handle: str) -> None:
        self._handle = app_handle
        self._seen: set[str] = set()

    def __call__(self, status: AppStatus) -> None:
        from torchx.runner.follow import status_message  # lazy: loaded by follow_app already

        msg = status_message(status)
        if status.is_terminal() or not msg or msg in self._seen:
            return
        self._seen.add(msg)
        logger.info("%s is %s: %s", self._handle, status.state.name, msg)


def _print_to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _log_prefix(colorize: bool) -> str:
    """The ``{role}/{replica}`` prefix of streamed log lines (green on a terminal)."""
    if not colorize:
        return "{role}/{replica} "
    from torchx.util.colors import ENDC, GREEN  # lazy: on a terminal only

    return f"{GREEN}{{role}}/{{replica}}{ENDC} "
