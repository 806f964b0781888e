"""Stream the logs of every replica of an app, each line prefixed with ``{role}/{replica}``.

:class:`LogTee` copies replica logs to any sink (a file's ``write``, a logger's ``info``):
``torchx log``, ``torchx run``, the runner's follow loop and the adapters all use it. One
thread reads each replica through the runner's ``log_lines``. This is TorchX's public path of
:func:`tee_logs`; the private helpers TorchX's ``torchx log`` used from here are kept. The
runner is typed structurally (:class:`LogReader`): ``torchx.util`` sits below the runner, which
is imported only when :func:`tee_logs` has to create one (TorchX's ``runner=None``).
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Optional, TextIO

if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import datetime
    from typing import Any, Protocol

    class _Role(Protocol):
        @property
        def name(self) -> str: ...
        @property
        def num_replicas(self) -> int: ...

    class _App(Protocol):  # an AppDef
        @property
        def roles(self) -> Sequence[_Role]: ...

    class _Replica(Protocol):
        @property
        def id(self) -> int: ...

    class _RoleStatus(Protocol):
        @property
        def role(self) -> str: ...
        @property
        def replicas(self) -> Sequence[_Replica]: ...

    class _Status(Protocol):  # an AppStatus
        @property
        def roles(self) -> Sequence[_RoleStatus]: ...

    class LogReader(Protocol):
        """What :class:`LogTee` needs of a ``torchx.runner.Runner``."""

        def describe(self, app_handle: str) -> Optional[_App]: ...

        def log_lines(
            self,
            app_handle: str,
            role_name: str,
            k: int = 0,
            regex: Optional[str] = None,
            since: Optional[datetime] = None,
            until: Optional[datetime] = None,
            should_tail: bool = False,
            streams: Optional[Any] = None,
        ) -> Iterable[str]: ...

    Runner = LogReader
    Stream = Any  # torchx.schedulers.api.Stream
    AppHandle = str
    AppDef = _App
    AppStatus = _Status

__all__ = ["LogTee", "Sink", "prefix_line", "replicas_of", "tee_logs"]

Sink = Callable[[str], None]
"""Where :class:`LogTee` sends each prefixed line."""

logger: logging.Logger = logging.getLogger(__name__)

_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")
_GREEN = "\033[32m"
_ENDC = "\033[0m"


def prefix_line(prefix: str, line: str) -> str:
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


_prefix_line = prefix_line  # TorchX's private name (``torchx log`` imported it from here)


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


def replicas_of(app: Optional[AppDef], status: Optional[AppStatus]) -> list[tuple[str, int]]:
    """Returns ``(role, replica id)`` pairs from the app's roles, else from its status."""
    if app is not None and app.roles:
        return _find_role_replicas(app, None)
    if status is not None:
        return [(rs.role, rep.id) for rs in status.roles for rep in rs.replicas]
    return []


class LogTee:
    """Copies the log lines of an app's replicas to a sink, each with a replica prefix.

    :meth:`start` follows the logs in one daemon thread per replica until the app ends
    (``should_tail``); :meth:`copy` reads what is there now in the calling thread. A replica
    whose logs cannot be read never stops the others: its exception lands in :attr:`errors`.

    Example::

        tee = LogTee(runner, handle, sys.stdout.write, keep_newlines=True).start()
        runner.wait(handle)
        tee.join()

    Args:
        runner: the runner to read the logs through.
        app_handle: the app.
        sink: called with each prefixed line (in the replica threads when started).
        replicas: ``(role, replica id)`` pairs; None means every replica of
            ``runner.describe(app_handle)``.
        prefix: the prefix format, with ``{role}`` and ``{replica}``.
        regex: keep only lines matching this regex (None: all).
        streams: which stream to read (None: the scheduler's default).
        keep_newlines: pass line breaks to the sink (a file's ``write``); otherwise the
            trailing break is stripped (a logger's ``info``).
        on_error: called with ``(role, replica id, exception)`` when a replica's logs
            cannot be read (the exception is also kept in :attr:`errors`).
    """

    def __init__(
        self,
        runner: Runner,
        app_handle: AppHandle,
        sink: Sink,
        *,
        replicas: Optional[Sequence[tuple[str, int]]] = None,
        prefix: str = "{role}/{replica} ",
        regex: Optional[str] = None,
        streams: Optional[Stream] = None,
        keep_newlines: bool = False,
        on_error: Optional[Callable[[str, int, BaseException], None]] = None,
    ) -> None:
        self._runner = runner
        self._handle = app_handle
        self._sink = sink
        self._replicas = replicas
        self._prefix = prefix
        self._regex = regex
        self._streams = streams
        self._keep = keep_newlines
        self._on_error = on_error
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []

    def replicas(self) -> list[tuple[str, int]]:
        """Returns the replicas to copy (described from the app when not given).

        Raises:
            ValueError: replicas were not given and the app does not exist.
        """
        if self._replicas is None:
            app = self._runner.describe(self._handle)
            if app is None:
                raise ValueError(f"app `{self._handle}` does not exist")
            self._replicas = _find_role_replicas(app, None)
        return list(self._replicas)

    def start(self, should_tail: bool = True) -> LogTee:
        """Starts one daemon thread per replica and returns self."""
        for role, k in self.replicas():
            thread = threading.Thread(
                target=self._copy_one,
                args=(role, k, should_tail, None),
                name=f"torchx-log-{role}-{k}",
                daemon=True,
            )
            thread.start()
            self.threads.append(thread)
        return self

    def join(self, timeout: Optional[float] = None) -> None:
        """Waits (at most ``timeout`` s per thread) for the started threads."""
        for thread in self.threads:
            thread.join(timeout)

    def copy(self, limit: Optional[int] = None) -> None:
        """Copies the (first ``limit``) current lines of each replica, in this thread."""
        for role, k in self.replicas():
            self._copy_one(role, k, False, limit)

    def _copy_one(self, role: str, k: int, should_tail: bool, limit: Optional[int]) -> None:
        prefix = self._prefix.format(role=role, replica=k)
        try:
            lines = self._runner.log_lines(
                self._handle, role, k, self._regex, should_tail=should_tail, streams=self._streams
            )
            for line in itertools.islice(lines, limit):
                text = prefix_line(prefix, line)
                self._sink(text if self._keep else text.rstrip("\r\n"))
        except Exception as e:  # a log problem is reported, never raised into the caller
            self.errors.append(e)
            if self._on_error is not None:
                self._on_error(role, k, e)


def _file_tee(
    dst: TextIO,
    runner: Runner,
    app_handle: AppHandle,
    replicas: Sequence[tuple[str, int]],
    regex: Optional[str],
    streams: Optional[Stream],
    colorize: bool,
) -> LogTee:
    """A :class:`LogTee` writing ``role/replica``-prefixed lines to ``dst``, flushed per line."""
    prefix = f"{_GREEN}{{role}}/{{replica}}{_ENDC} " if colorize else "{role}/{replica} "

    def write(text: str) -> None:
        dst.write(text)
        dst.flush()

    return LogTee(
        runner,
        app_handle,
        write,
        replicas=replicas,
        prefix=prefix,
        regex=regex,
        streams=streams,
        keep_newlines=True,
    )


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
    """Copies one replica's log lines to ``dst`` in this thread (TorchX's ``print_log_lines``).

    A failure to read the logs is appended to ``exceptions`` instead of being raised.
    """
    tee = _file_tee(dst, runner, app_handle, [(role_name, replica_id)], regex, streams, colorize)
    tee._copy_one(role_name, replica_id, should_tail, None)
    exceptions.extend(tee.errors)


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
    tee = _file_tee(dst, runner, app_handle, replica_ids, regex, streams, colorize)
    tee.start(should_tail)
    return tee.threads, tee.errors


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
        # TorchX's default: the one import of a layer above util (pyproject [tool.importlinter])
        from torchx.runner import (  # lazy: util -> runner, upwards (TorchX's tee_logs API)
            get_runner,
        )

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
