"""``torchx describe APP_HANDLE``: print an app's AppDef. An unknown app exits 1."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from torchx.cli.cmd_base import AppHandleSubCommand, unknown_app_error

if TYPE_CHECKING:
    from torchx.runner import Runner

__all__ = ["CmdDescribe"]


class CmdDescribe(AppHandleSubCommand):
    """Describes an app (its AppDef)."""

    def run_with_runner(self, args: argparse.Namespace, runner: Runner) -> None:
        """Prints ``pformat(asdict(app), indent=2, width=80)``."""
        from dataclasses import asdict
        from pprint import pformat

        app = runner.describe(args.app_handle)
        if app is None:
            raise unknown_app_error(args.app_handle)
        print(pformat(asdict(app), indent=2, width=80))
