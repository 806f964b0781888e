"""``torchx builtins``: list the available components, or print one's source.

The list comes from a cache of the component names when nothing it depends on changed (see
:mod:`torchx.cli._component_index`), so a repeated ``torchx builtins`` imports no component.

``CmdBuiltins`` is also importable from :mod:`torchx.cli.cmd_run`, where TorchX defines it.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from torchx.cli.cmd_base import SubCommand

if TYPE_CHECKING:
    from torchx.specs.finder import _Component

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

    def _builtins(self) -> dict[str, _Component]:
        """Returns the valid builtin components by name (imports them; ``run`` uses a cache)."""
        from torchx.specs.finder import (  # lazy: the specs: torchx run imports this module
            get_components,
        )

        return get_components()

    def run(self, args: argparse.Namespace) -> None:
        """Prints the component list, or the source of ``--print NAME``."""
        if args.print:
            from torchx.specs import finder  # lazy: the specs: torchx run imports this module

            print(finder.get_builtin_source(args.print))
            return
        from torchx.cli._component_index import (  # lazy: torchx run imports this module
            component_names,
        )

        names = component_names()
        print(f"Found {len(names)} builtin components:")
        for i, name in enumerate(names):
            print(f" {i + 1:2d}. {name}")
