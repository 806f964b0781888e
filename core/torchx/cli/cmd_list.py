"""``torchx list [-s SCHEDULER] [-cfg k=v,...] [--json]``: list a scheduler's apps as a table.

The default scheduler is ``[cli:list] scheduler`` of ``.torchxconfig``, else the first
registered one. ``-cfg`` values win over the ``[SCHEDULER]`` section of ``.torchxconfig``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tabulate import tabulate

from torchx.cli._schedulers import add_scheduler_argument, scheduler_names
from torchx.cli.argparse_util import ArgOnceAction, torchxconfig_list
from torchx.cli.cmd_base import SubCommand
from torchx.runner import config

__all__ = [
    "APP_NAME_HEADER",
    "CmdList",
    "HANDLE_HEADER",
    "NAME_HEADER",
    "STATUS_HEADER",
    "get_runner",
]

HANDLE_HEADER = "APP HANDLE"
APP_NAME_HEADER = "APP NAME"
STATUS_HEADER = "APP STATUS"
NAME_HEADER = APP_NAME_HEADER  # TorchX's name for the same header


def get_runner(*args: Any, **kwargs: Any) -> Any:
    """Returns ``torchx.runner.get_runner(*args, **kwargs)`` (looked up at call time)."""
    from torchx.runner import (  # lazy: looked up at call time (patched in tests)
        get_runner as _get_runner,
    )

    return _get_runner(*args, **kwargs)


class CmdList(SubCommand):
    """Lists the apps of a scheduler."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        """Adds ``-s/--scheduler`` and ``-cfg/--scheduler_args``."""
        names = scheduler_names()
        add_scheduler_argument(
            subparser,
            "-s",
            "--scheduler",
            names=names,
            action=torchxconfig_list,
            default=names[0] if names else None,
            help="the scheduler to list the apps of",
        )
        subparser.add_argument(
            "-cfg",
            "--scheduler_args",
            type=str,
            action=ArgOnceAction,
            default=None,
            help="comma-separated run options for the scheduler, e.g. -cfg namespace=ml",
        )
        subparser.add_argument(
            "--json", action="store_true", default=False, help="print a JSON list instead"
        )

    def run(self, args: argparse.Namespace) -> None:
        """Prints the ``APP HANDLE``, ``APP NAME``, ``APP STATUS`` table."""
        with get_runner() as runner:
            opts = runner.scheduler_run_opts(args.scheduler)
            cfg = dict(opts.cfg_from_str(args.scheduler_args or ""))
            config.apply(scheduler=args.scheduler, cfg=cfg)
            apps = runner.list(args.scheduler, cfg if cfg else None)  # as TorchX: {} -> None
        if args.json:
            data = [
                {
                    "app_handle": a.app_handle,
                    "app_id": a.app_id,
                    "name": a.name,
                    "state": str(a.state),
                }
                for a in apps
            ]
            print(json.dumps(data, indent=2))
            return
        rows = [[app.app_handle, app.name, str(app.state)] for app in apps]
        print(tabulate(rows, headers=[HANDLE_HEADER, APP_NAME_HEADER, STATUS_HEADER]))
