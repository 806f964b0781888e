"""Lazy loading for the ``torchx`` parser (private).

``torchx --help`` must not import the runner, the schedulers or the specs. So the builtin
sub-commands are :class:`LazySubCommand` proxies that import their module on first use, and
:class:`LazySubParsersAction` calls ``add_arguments`` only for the sub-command being parsed.
"""

from __future__ import annotations

import argparse
import importlib

from torchx.cli.cmd_base import SubCommand
from torchx.util.entrypoints import group_may_have_entry_points as may_have
from torchx.util.terminal import terminal_columns

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["HelpFormatter", "LazySubCommand", "LazySubParsersAction", "group_may_have_entry_points"]


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, sized like argparse does it but without importing shutil."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        kwargs.setdefault("width", terminal_columns() - 2)
        super().__init__(prog, **kwargs)


class LazySubCommand(SubCommand):
    """A sub-command whose class (``module:Class``) is imported on first use.

    Args:
        ref: ``"module:Class"`` of the real command (instantiated without arguments).
        help: one-line help shown by ``torchx --help`` (no import needed).
    """

    def __init__(self, ref: str, help: str) -> None:
        self.ref = ref
        self.help = help
        self._cmd: SubCommand | None = None

    def load(self) -> SubCommand:
        """Imports, instantiates (once) and returns the real command."""
        if self._cmd is None:
            module_name, _, cls_name = self.ref.partition(":")
            cls = getattr(importlib.import_module(module_name), cls_name)
            self._cmd = cls()
        return self._cmd

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        """Adds the real command's arguments."""
        self.load().add_arguments(subparser)

    def run(self, args: argparse.Namespace) -> None:
        """Runs the real command."""
        self.load().run(args)

    def __repr__(self) -> str:
        return f"LazySubCommand({self.ref!r})"


class LazySubParsersAction(argparse._SubParsersAction):
    """Sub-parsers action that creates a sub-command's parser only when it is selected.

    ``torchx --help`` needs only each command's name and one-line help, so a sub-parser (and
    its arguments, ``SubCommand.add_arguments``) is built on first use: parsing that command
    or :meth:`build`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: dict[str, tuple[SubCommand, str | None]] = {}

    def add_command(self, name: str, cmd: SubCommand, help: str | None) -> None:
        """Adds the sub-command ``name``; its parser is created when ``name`` is parsed.

        Args:
            name: the sub-command name.
            cmd: the sub-command.
            help: its one-line help.

        Raises:
            argparse.ArgumentError: ``name`` was already added.
        """
        if name in self._name_parser_map:
            raise argparse.ArgumentError(self, f"conflicting subparser: {name}")
        self._choices_actions.append(self._ChoicesPseudoAction(name, (), help))
        # a placeholder keeps ``choices`` (the valid names) complete until the parser exists
        self._name_parser_map[name] = _UNBUILT
        self._pending[name] = (cmd, help)

    def build(self, name: str) -> argparse.ArgumentParser:
        """Returns the sub-parser ``name`` with its arguments added (created once).

        Args:
            name: the sub-command name.
        """
        pending = self._pending.pop(name, None)
        if pending is not None:
            cmd, help = pending
            parser = self._parser_class(
                prog=f"{self._prog_prefix} {name}",
                description=help,
                formatter_class=HelpFormatter,
            )
            parser.set_defaults(func=cmd.run)
            self._name_parser_map[name] = parser
            cmd.add_arguments(parser)
        return self._name_parser_map[name]

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if isinstance(values, (list, tuple)) and values and values[0] in self._pending:
            self.build(values[0])
        super().__call__(parser, namespace, values, option_string)


_UNBUILT: Any = object()


def group_may_have_entry_points(group: str) -> bool:
    """See :func:`torchx.util.entrypoints.group_may_have_entry_points`."""
    return may_have(group)
