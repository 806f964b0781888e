"""``torchx status APP_HANDLE [--roles a,b] [--json]``: print an app's status.

An unknown app exits 1.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Optional

from torchx.cli.cmd_base import AppHandleSubCommand, unknown_app_error

if TYPE_CHECKING:
    from torchx.runner import Runner

__all__ = ["CmdStatus", "parse_list_arg"]


def parse_list_arg(arg: str) -> Optional[list[str]]:
    """Splits a comma-separated ``--roles`` value; None (meaning all) when it is empty."""
    items = [item for item in arg.split(",") if item]
    return items or None


class CmdStatus(AppHandleSubCommand):
    """Prints the status of an app."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        """Adds ``app_handle``, ``--roles`` and ``--json``."""
        super().add_arguments(subparser)
        subparser.add_argument(
            "--roles",
            type=str,
            default="",
            help="comma-separated roles to show (default: all)",
        )
        subparser.add_argument(
            "--json", action="store_true", default=False, help="print the status as JSON"
        )

    def run_with_runner(self, args: argparse.Namespace, runner: Runner) -> None:
        """Prints ``AppStatus.format(roles)`` or its JSON form."""
        status = runner.status(args.app_handle)
        if status is None:
            raise unknown_app_error(args.app_handle)
        roles = parse_list_arg(args.roles)
        if args.json:
            print(json.dumps(status.to_json(roles)))
        else:
            print(status.format(roles))
