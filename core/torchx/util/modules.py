"""Import helpers (``torchx.util.modules``).

Example::

    from torchx.util.modules import import_attr, load_module

    fn = load_module("my_pkg.trackers:create")  # the attribute, or None if it does not exist
    extra = import_attr("optional_pkg.resources", "NAMED_RESOURCES", default={})
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, TypeVar

__all__ = ["import_attr", "load_module"]

T = TypeVar("T")


def _is_missing(err: ModuleNotFoundError, module_path: str) -> bool:
    """True when ``err`` says ``module_path`` itself (or one of its parents) does not exist."""
    missing = err.name or ""
    return bool(missing) and (module_path == missing or module_path.startswith(missing + "."))


def load_module(path: str) -> ModuleType | Any | None:
    """Imports ``"pkg.mod"`` or ``"pkg.mod:attr"`` and returns the module or the attribute.

    ``attr`` may be dotted (``"pkg.mod:Class.method"``).

    Args:
        path: ``full.module.path`` optionally followed by ``:attribute``.

    Returns:
        The module or attribute, or ``None`` when the module or the attribute does not exist.
        An error raised while importing an existing module (for example one of its own
        dependencies is missing) propagates.
    """
    module_path, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_path)
    except ModuleNotFoundError as e:
        if _is_missing(e, module_path):
            return None
        raise
    for part in attr.split(".") if attr else []:
        if not hasattr(obj, part):
            return None
        obj = getattr(obj, part)
    return obj


def import_attr(module: str, attr: str, default: T) -> Any | T:
    """Returns ``module.attr``, or ``default`` when ``module`` cannot be imported.

    Any ``ModuleNotFoundError`` raised while importing ``module`` (the module itself or one of
    its dependencies is not installed) gives ``default``; this is meant for optional modules.

    Args:
        module: dotted module path.
        attr: attribute name in that module.
        default: value returned when the module is not importable.

    Returns:
        The attribute, or ``default``.

    Raises:
        AttributeError: the module exists but has no attribute ``attr``.
    """
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError:
        return default
    return getattr(mod, attr)
