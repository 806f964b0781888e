"""Finding one builtin component without importing every builtin module (private).

``torchx run utils.sh`` needs ``torchx.components.utils`` only; the full walk of
:class:`torchx.specs.finder.ModuleComponentsFinder` imports and lints every builtin module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Optional

from torchx.util import entrypoints

if TYPE_CHECKING:
    from torchx.specs.file_linter import ComponentFunctionValidator
    from torchx.specs.finder import _Component

__all__ = ["find_builtin"]


def find_builtin(
    name: str, validators: Optional[list[ComponentFunctionValidator]]
) -> Optional[_Component]:
    """The builtin component ``name`` (``utils.sh``), looked up in its own module only.

    Gives what the full walk gives for that name, or None whenever the walk must decide: when
    ``[torchx.components]`` entry points may exist (they replace the builtins), when a part of
    the name is private or not an identifier, when a module on the way is not a regular module
    or package (the walk does not search those) or fails to import (the walk warns), or when
    the module has no such function (the walk's error lists close matches).

    Args:
        name: the component name.
        validators: linter checks; None means the defaults.
    """
    from torchx.specs import finder

    modname, _, _ = name.rpartition(".")
    parts = name.split(".")
    if not modname or any(p.startswith("_") or not p.isidentifier() for p in parts):
        return None
    if entrypoints.load_group(finder._ENTRY_POINT_GROUP, default=None):
        return None  # (nothing is imported until an entry point is called)
    try:
        base = importlib.import_module(finder._BUILTINS_MODULE)
        chain = [
            importlib.import_module(".".join([finder._BUILTINS_MODULE, *parts[: i + 1]]))
            for i in range(len(parts) - 1)
        ]
    except Exception:
        return None
    if any(
        getattr(m, "__file__", None) is None or m.__name__ in finder._NOT_COMPONENT_MODULES
        for m in chain
    ) or any(not finder.is_package(m) for m in chain[:-1]):
        return None
    walker = finder.ModuleComponentsFinder(base, "")
    for component in walker._components_in(chain[-1], base, validators):
        if component.name == name:
            return component
    return None
