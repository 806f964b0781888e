"""Public aliases and helpers of ``torchx.schedulers.local_scheduler`` that TorchX code imports."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Optional, Protocol

from torchx.schedulers._local._logs import iter_log_lines
from torchx.specs.api import is_terminal

if TYPE_CHECKING:
    from torchx.schedulers.api import Scheduler

__all__ = [
    "COMBINED_LOG",
    "STDERR_LOG",
    "STDOUT_LOG",
    "AppId",
    "AppName",
    "LogIterator",
    "PopenProtocol",
    "RoleName",
]

AppId = str
"""An app id (the last part of an app handle)."""

AppName = str
"""An app name (``AppDef.name``)."""

RoleName = str
"""A role name (``Role.name``)."""

STDOUT_LOG = "stdout.log"
"""File name of a replica's stdout log, in ``{log_dir}/{role}/{replica}/``."""

STDERR_LOG = "stderr.log"
"""File name of a replica's stderr log."""

COMBINED_LOG = "combined.log"
"""File name of a replica's log of both streams, whole lines in arrival order."""


class PopenProtocol(Protocol):
    """What the local scheduler needs from a started process (``subprocess.Popen`` fits)."""

    @property
    def pid(self) -> int:
        """The process id."""
        ...

    @property
    def returncode(self) -> Optional[int]:
        """The exit code once the process ended, else None."""
        ...

    def wait(self, timeout: Optional[float] = None) -> int:
        """Waits for the process to end and returns its exit code."""
        ...

    def poll(self) -> Optional[int]:
        """Returns the exit code if the process ended, else None."""
        ...

    def kill(self) -> None:
        """Kills the process."""
        ...


class LogIterator:
    """Iterates over the lines of one replica's log file (each line keeps its newline).

    Args:
        app_id: the app the log belongs to.
        log_file: the log file path.
        scheduler: the scheduler that ran the app (asked whether the app has ended).
        should_tail: keep following the file until the app ends.
    """

    def __init__(
        self, app_id: str, log_file: str, scheduler: Scheduler[object], should_tail: bool = True
    ) -> None:
        self._app_id = app_id
        self._log_file = log_file
        self._scheduler = scheduler
        self._lines = iter_log_lines(app_id, log_file, self._app_done, should_tail)

    def _app_done(self) -> bool:
        desc = self._scheduler.describe(self._app_id)
        return desc is None or is_terminal(desc.state)

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        return next(self._lines)
