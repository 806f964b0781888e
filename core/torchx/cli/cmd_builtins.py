"""``torchx builtins``: list the available components, or print one's source.

``CmdBuiltins`` is also importable from :mod:`torchx.cli.cmd_run`, where TorchX defines it.
"""

from __future__ import annotations

import argparse

from torchx.cli.cmd_base import SubCommand

__all__ = ["CmdBuiltins"]


class CmdBuiltins(SubCommand):
    """Lists the builtin components."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        """Adds ``--print NAME``."""
        subparser.add_argument(
            "--print",
            type=str,
            default=None,
            metavar="NAME",
            help="print the source of the builtin component NAME",
        )

    def run(self, args: argparse.Namespace) -> None:
        """Prints the component list, or the source of ``--print NAME``."""
        from torchx.specs import finder

        if args.print:
            print(finder.get_builtin_source(args.print))
            return
        components = finder.get_components()
        print(f"Found {len(components)} builtin components:")
        for i, component in enumerate(components.values()):
            print(f" {i + 1:2d}. {component.name}")
