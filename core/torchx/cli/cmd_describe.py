"""``torchx describe APP_HANDLE [--json]``: print an app's AppDef. An unknown app exits 1."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pprint import pformat
from typing import TYPE_CHECKING

from torchx.cli.cmd_base import AppHandleSubCommand, unknown_app_error

if TYPE_CHECKING:
    from torchx.runner import Runner

__all__ = ["CmdDescribe"]


class CmdDescribe(AppHandleSubCommand):
    """Describes an app (its AppDef)."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        """Adds ``app_handle`` and ``--json``."""
        super().add_arguments(subparser)
        subparser.add_argument(
            "--json", action="store_true", default=False, help="print the AppDef as JSON"
        )

    def run_with_runner(self, args: argparse.Namespace, runner: Runner) -> None:
        """Prints ``pformat(asdict(app), indent=2, width=80)`` (or JSON with ``--json``)."""
        app = runner.describe(args.app_handle)
        if app is None:
            raise unknown_app_error(args.app_handle)
        if args.json:
            print(json.dumps(asdict(app), indent=2, default=str))
            return

        print(pformat(asdict(app), indent=2, width=80))
