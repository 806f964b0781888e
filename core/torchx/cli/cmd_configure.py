"""``torchx configure [-s a,b] [--print] [-a]``: write a ``.torchxconfig`` template.

Writes ``./.torchxconfig`` (replacing an existing one, as TorchX does) with a section per
scheduler holding its required run options, or every option with ``-a``. ``--print`` writes
to stdout instead.
"""

from __future__ import annotations

import argparse
import sys

from torchx.cli._errors import CliError
from torchx.cli._schedulers import scheduler_names, unknown_scheduler_message
from torchx.cli.cmd_base import SubCommand
from torchx.runner import config

__all__ = ["CmdConfigure"]


class CmdConfigure(SubCommand):
    """Writes a .torchxconfig file."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        """Adds ``-s/--schedulers``, ``--print`` and ``-a/--all``."""
        subparser.add_argument(
            "-s",
            "--schedulers",
            type=str,
            default=None,
            help="comma-separated schedulers to configure (default: all registered)",
        )
        subparser.add_argument(
            "--print",
            action="store_true",
            default=False,
            help="print the config to stdout instead of writing ./.torchxconfig",
        )
        subparser.add_argument(
            "-a",
            "--all",
            action="store_true",
            default=False,
            help="write every run option, not only the required ones",
        )

    def run(self, args: argparse.Namespace) -> None:
        """Writes (or prints) the config."""
        schedulers = [s for s in (args.schedulers or "").split(",") if s] or None
        if schedulers:
            names = scheduler_names()
            for name in schedulers:
                if name not in names:
                    raise CliError(unknown_scheduler_message(name, names))
        if args.print:
            config.dump(f=sys.stdout, schedulers=schedulers, required_only=not args.all)
            return
        with open(config.CONFIG_FILE, "w") as f:
            config.dump(f=f, schedulers=schedulers, required_only=not args.all)
        print(f"wrote {config.CONFIG_FILE}", file=sys.stderr)
