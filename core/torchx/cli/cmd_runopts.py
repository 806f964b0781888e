"""``torchx runopts [SCHEDULER]``: print the run options of one or every scheduler.

A scheduler whose module cannot be imported (a missing extra) prints its error instead.
"""

from __future__ import annotations

import argparse
from typing import Any

from torchx.cli._schedulers import add_scheduler_argument, scheduler_names
from torchx.cli.cmd_base import SubCommand

__all__ = ["CmdRunopts", "get_runner"]


def get_runner(*args: Any, **kwargs: Any) -> Any:
    """Returns ``torchx.runner.get_runner(*args, **kwargs)`` (looked up at call time)."""
    from torchx.runner import get_runner as _get_runner

    return _get_runner(*args, **kwargs)


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
        with get_runner() as runner:
            names = [args.scheduler] if args.scheduler else runner.scheduler_backends()
            for name in names:
                try:
                    opts = runner.scheduler_run_opts(name)
                except ImportError as e:
                    print(f"{name}: {e}\n")
                    continue
                print(f"{name}:\n{opts!r}\n")
