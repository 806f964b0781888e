"""``torchx cancel APP_HANDLE``: cancel an app. An unknown app exits 1."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING

from torchx.cli.cmd_base import AppHandleSubCommand

if TYPE_CHECKING:
    from torchx.runner import Runner

__all__ = ["CmdCancel"]

logger: logging.Logger = logging.getLogger(__name__)


class CmdCancel(AppHandleSubCommand):
    """Cancels a running app."""

    def run_with_runner(self, args: argparse.Namespace, runner: Runner) -> None:
        """Calls ``Runner.cancel`` (a no-op for an app that has already finished)."""
        runner.cancel(args.app_handle)
        logger.info("cancelled %s", args.app_handle)
