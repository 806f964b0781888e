"""``torchx log``: print or tail the logs of an app's replicas.

The identifier is ``SCHEDULER://[SESSION_NAME]/APP_ID/[ROLE_NAME/[REPLICA_IDS,...]]``; every
line is prefixed with ``{role}/{replica} ``. Without explicit replica ids it waits (polling
every second) until the app has started. A missing app or an unknown role exits 1 (TorchX
exits 0 for a missing app: fixed, quirk 27).
"""

from __future__ import annotations

import argparse
import difflib
import logging
import re
import sys
from typing import TYPE_CHECKING, Any, Optional, TextIO

from torchx.cli._errors import CliError
from torchx.cli.cmd_base import SubCommand, unknown_app_error
from torchx.schedulers.api import Stream
from torchx.specs.api import is_started
from torchx.specs.builders import make_app_handle
from torchx.util.colors import ENDC as ENDC
from torchx.util.colors import GREEN as GREEN
from torchx.util.log_tee_helpers import (
    _find_role_replicas,
    _print_log_lines,
    _start_threads_to_monitor_role_replicas,
)
from torchx.util.log_tee_helpers import _prefix_line as _prefix_line

if TYPE_CHECKING:
    from torchx.runner import Runner
    from torchx.specs.api import AppDef

__all__ = [
    "ID_FORMAT",
    "CmdLog",
    "find_role_replicas",
    "get_logs",
    "get_runner",
    "print_log_lines",
    "validate",
]

logger: logging.Logger = logging.getLogger(__name__)

ID_FORMAT = "SCHEDULER://[SESSION_NAME]/APP_ID/[ROLE_NAME/[REPLICA_IDS,...]]"
_ID_REGEX = re.compile(r"^\w+://[^/]*/[^/]+(/[^/]+(/(\d+,?)+)?)?$")

# kept importable from this module, as in TorchX
find_role_replicas = _find_role_replicas
print_log_lines = _print_log_lines


def get_runner(*args: Any, **kwargs: Any) -> Runner:
    """Returns ``torchx.runner.get_runner(*args, **kwargs)`` (looked up at call time)."""
    from torchx.runner import (  # lazy: looked up at call time (patched in tests)
        get_runner as _get_runner,
    )

    return _get_runner(*args, **kwargs)


def validate(job_identifier: str) -> None:
    """Checks the form of a ``torchx log`` identifier.

    Args:
        job_identifier: ``SCHEDULER://[SESSION_NAME]/APP_ID/[ROLE_NAME/[REPLICA_IDS,...]]``.

    Raises:
        CliError: the identifier is malformed (exit code 1).
    """
    if not _ID_REGEX.match(job_identifier):
        raise CliError(f"`{job_identifier}` is not of the form {ID_FORMAT}")


def _wait_until_started(runner: Runner, app_handle: str) -> None:

    waiting_logged = False
    while True:
        status = runner.status(app_handle)
        if status is None:
            raise unknown_app_error(app_handle)
        if is_started(status.state):
            return
        if not waiting_logged:
            logger.info("Waiting for app state response before fetching logs...")
            waiting_logged = True
        runner.wait_for_change(app_handle, 1.0)


def _unknown_role(role_name: str, app: AppDef) -> CliError:
    names = [role.name for role in app.roles]
    ranked = difflib.get_close_matches(role_name, names, n=len(names), cutoff=0.0)
    return CliError(
        f"no role `{role_name}` found for app `{app.name}`, did you mean one of the"
        f" following: {', '.join(f'`{n}`' for n in ranked) or '(the app has no roles)'}"
    )


def _replicas(
    runner: Runner, app_handle: str, role_name: Optional[str], ids: Optional[str]
) -> list[tuple[str, int]]:
    if runner.status(app_handle) is None:
        raise unknown_app_error(app_handle)
    if role_name is not None and ids is not None:
        return [(role_name, int(i)) for i in ids.split(",") if i]
    _wait_until_started(runner, app_handle)
    app = runner.describe(app_handle)
    if app is None:
        raise unknown_app_error(app_handle)
    replicas = find_role_replicas(app, role_name)
    if role_name is not None and not replicas:
        raise _unknown_role(role_name, app)
    return replicas


def get_logs(
    file: TextIO,
    identifier: str,
    regex: Optional[str],
    should_tail: bool = False,
    runner: Optional[Runner] = None,
    streams: Optional[Stream] = None,
    colorize: bool = False,
) -> None:
    """Writes the logs of the replicas named by ``identifier`` to ``file``.

    Args:
        file: where to write the ``{role}/{replica} ``-prefixed lines.
        identifier: ``SCHEDULER://[SESSION_NAME]/APP_ID/[ROLE_NAME/[REPLICA_IDS,...]]``; an
            empty session means ``default``.
        regex: keep only lines matching this regex (None: all).
        should_tail: keep reading until the app ends.
        runner: the runner to use (default: ``get_runner()``).
        streams: which stream to read (None: the scheduler's default, usually combined).
        colorize: colour the prefixes.

    Raises:
        CliError: malformed identifier, missing app or unknown role (exit code 1).
        Exception: the first exception raised while reading a replica's log.
    """
    validate(identifier)
    scheduler, _, rest = identifier.partition("://")
    path = rest.split("/")
    session = path[0] or "default"
    app_handle = make_app_handle(scheduler, session, path[1])
    role_name = path[2] if len(path) > 2 else None
    ids = path[3] if len(path) > 3 else None
    if runner is None:
        runner = get_runner()
    replicas = _replicas(runner, app_handle, role_name, ids)
    threads, exceptions = _start_threads_to_monitor_role_replicas(
        file, app_handle, regex, runner, replicas, should_tail, streams, colorize
    )
    for thread in threads:
        thread.join()
    if exceptions:
        raise exceptions[0]


class CmdLog(SubCommand):
    """Prints or tails the logs of an app."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        """Adds ``identifier``, ``--regex``, ``-t/--tail`` and ``--streams``."""
        subparser.add_argument(
            "--regex", type=str, default=None, help="regex filter; prints only matching lines"
        )
        subparser.add_argument(
            "-t", "--tail", action="store_true", default=False, help="tail the logs"
        )
        subparser.add_argument(
            "--streams",
            choices=["stdout", "stderr", "combined"],
            default=None,
            help="the stream to read (default: the scheduler's, usually combined)",
        )
        subparser.add_argument(
            "identifier",
            type=str,
            metavar=ID_FORMAT,
            help="the app (and optionally role and replica ids) to read the logs of",
        )

    def run(self, args: argparse.Namespace) -> None:
        """Prints the logs to stdout."""
        streams = Stream(args.streams) if args.streams else None
        with get_runner() as runner:
            get_logs(
                sys.stdout,
                args.identifier,
                args.regex,
                args.tail,
                runner=runner,
                streams=streams,
                colorize=sys.stdout.isatty(),
            )
