"""Finding one builtin component without importing every builtin module (private).

``torchx run utils.sh`` needs ``torchx.components.utils`` only; the full walk of
:class:`torchx.specs.finder.ModuleComponentsFinder` imports and lints every builtin module.
The finder passes its names and its per-module step in, so this module does not import it.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable, Collection
from typing import Any, Optional

from torchx.util import entrypoints

__all__ = ["find_builtin"]


def find_builtin(
    name: str,
    *,
    base_module: str,
    skip: Collection[str],
    entry_point_group: str,
    components_in: Callable[[types.ModuleType, types.ModuleType], list[Any]],
) -> Optional[Any]:
    """The builtin component ``name`` (``utils.sh``), looked up in its own module only.

    Gives what the full walk gives for that name, or None whenever the walk must decide: when
    ``[entry_point_group]`` entry points exist (they replace the builtins), when a part of the
    name is private or not an identifier, when a module on the way is skipped, is not a
    regular module or package (the walk does not search those) or fails to import (the walk
    warns), or when the module has no such function (the walk's error lists close matches).

    Args:
        name: the component name.
        base_module: the builtins package (``torchx.components``).
        skip: modules the walk does not search.
        entry_point_group: the group whose entry points replace the builtins.
        components_in: the walk's components of ``(module, base package)``.
    """
    parts = name.split(".")
    if len(parts) < 2 or any(p.startswith("_") or not p.isidentifier() for p in parts):
        return None
    if entrypoints.load_group(entry_point_group, default=None):
        return None  # (nothing is imported until an entry point is called)
    try:
        base = importlib.import_module(base_module)
        chain = [
            importlib.import_module(".".join([base_module, *parts[: i + 1]]))
            for i in range(len(parts) - 1)
        ]
    except Exception:
        return None
    if any(getattr(m, "__file__", None) is None or m.__name__ in skip for m in chain) or any(
        not hasattr(m, "__path__") for m in chain[:-1]
    ):
        return None
    for component in components_in(chain[-1], base):
        if component.name == name:
            return component
    return None
