"""``torchx delete APP_HANDLE``: delete an app from its scheduler. An unknown app exits 1.

Kubernetes purges the job; schedulers without a separate delete cancel the app.
"""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING

from torchx.cli.cmd_base import AppHandleSubCommand

if TYPE_CHECKING:
    from torchx.runner import Runner

__all__ = ["CmdDelete"]

logger: logging.Logger = logging.getLogger(__name__)


class CmdDelete(AppHandleSubCommand):
    """Deletes an app from its scheduler."""

    def run_with_runner(self, args: argparse.Namespace, runner: Runner) -> None:
        """Calls ``Runner.delete``."""
        runner.delete(args.app_handle)
        logger.info("deleted %s", args.app_handle)
