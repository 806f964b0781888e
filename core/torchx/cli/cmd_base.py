"""Base classes of ``torchx`` sub-commands.

This module is imported by ``torchx --help``, so it imports nothing heavy at module level:
:func:`get_runner` imports :mod:`torchx.runner` only when it is called.
"""

from __future__ import annotations

import abc
import argparse

from torchx.cli._errors import CliError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from torchx.runner import Runner

__all__ = ["AppHandleSubCommand", "SubCommand", "unknown_app_error"]


def get_runner(*args: Any, **kwargs: Any) -> Runner:
    """Returns ``torchx.runner.get_runner(*args, **kwargs)``, importing the runner lazily."""
    from torchx.runner import (  # lazy: looked up at call time (patched in tests)
        get_runner as _get_runner,
    )

    return _get_runner(*args, **kwargs)


class SubCommand(abc.ABC):
    """A ``torchx`` sub-command: it declares its arguments and runs with the parsed namespace.

    Plugin packages subclass this and register the class under the ``torchx.cli.cmds``
    entry-point group (``name = module:Class``); the class is instantiated without arguments.
    The first line of the class docstring is the command's one-line help.
    """

    @abc.abstractmethod
    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        """Adds the command's arguments to its sub-parser.

        Args:
            subparser: the parser of this sub-command.
        """

    @abc.abstractmethod
    def run(self, args: argparse.Namespace) -> None:
        """Runs the command.

        Args:
            args: the parsed arguments.
        """


class AppHandleSubCommand(SubCommand):
    """A sub-command that acts on one app, given as ``SCHEDULER://SESSION/APP_ID``."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        """Adds the positional ``app_handle``.

        Args:
            subparser: the parser of this sub-command.
        """
        subparser.add_argument(
            "app_handle",
            type=str,
            help="torchx app handle (e.g. local_cwd://torchx/app_id)",
        )

    def run(self, args: argparse.Namespace) -> None:
        """Checks that the app exists, then calls :meth:`run_with_runner`.

        Args:
            args: the parsed arguments (``args.app_handle``).

        Raises:
            CliError: the app does not exist (exit code 1).
        """
        with get_runner() as runner:
            if runner.status(args.app_handle) is None:
                raise unknown_app_error(args.app_handle)
            self.run_with_runner(args, runner)

    @abc.abstractmethod
    def run_with_runner(self, args: argparse.Namespace, runner: Runner) -> None:
        """Runs the command with an open runner.

        Args:
            args: the parsed arguments.
            runner: the runner (closed by the caller).
        """


def unknown_app_error(app_handle: str) -> BaseException:
    """Returns the error for an app that does not exist (exit code 1).

    Args:
        app_handle: the handle the user gave.

    Returns:
        A ``CliError`` saying the app does not exist on its scheduler.
    """
    from torchx.specs.api import parse_app_handle  # lazy: the specs, ~6 ms: cmd_base is on --help

    scheduler, _, app_id = parse_app_handle(app_handle)
    return CliError(
        f"AppDef `{app_id}` does not exist or has been removed from `{scheduler}`'s data plane"
    )
