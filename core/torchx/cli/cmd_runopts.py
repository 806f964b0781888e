"""``torchx runopts [SCHEDULER]``: print the run options of one or every scheduler.

A scheduler whose module cannot be imported (a missing extra) prints its error instead. The
run options come straight from the scheduler factories (no ``Runner``), so the command starts
without importing the runner, events and trackers.
"""

from __future__ import annotations

import argparse

from torchx.cli._schedulers import add_scheduler_argument, scheduler_names
from torchx.cli.cmd_base import SubCommand
from torchx.runner.config_io import scheduler_run_opts
from torchx.schedulers import get_scheduler_factories

__all__ = ["CmdRunopts"]


class CmdRunopts(SubCommand):
    """Lists the run options of schedulers."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        """Adds the optional positional ``scheduler``."""
        add_scheduler_argument(
            subparser,
            "scheduler",
            names=scheduler_names(),
            nargs="?",
            default=None,
            help="the scheduler to show the run options of (default: all)",
        )

    def run(self, args: argparse.Namespace) -> None:
        r"""Prints ``"{scheduler}:\\n{runopts}\\n"`` per scheduler."""
        factories = get_scheduler_factories()
        for name in [args.scheduler] if args.scheduler else list(factories):
            try:
                opts = scheduler_run_opts(name, factories)
            except ImportError as e:
                print(f"{name}: {e}\n")
                continue
            print(f"{name}:\n{opts!r}\n")
