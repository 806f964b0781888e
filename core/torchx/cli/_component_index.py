"""The component names ``torchx builtins`` lists, cached (private).

Listing the components means importing every component module, linting each function and
reading the ``torchx.components`` entry points: most of a ``torchx builtins`` start. The names
found are stored as the ``components`` section of the one start-up cache
(:mod:`torchx.cli._startup_cache`, which also explains validity), so that a later start that
finds the section valid prints them without importing ``torchx.specs``.

Besides the cache's shared stat list (``sys.path`` entries, every distribution's
``entry_points.txt``) the section depends on the file of every imported module outside the
standard library (component modules, their imports, ``torchx`` itself), every package
directory that may have been searched for submodules and that directory's sub-directories (a
new ``__init__.py`` makes a sub-directory a package). Nothing is stored when discovery showed a
warning (a module that failed to import) or the cache refuses the entry (see there).
"""

from __future__ import annotations

import sys
import warnings

from torchx.cli import _startup_cache
from torchx.util import stat_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

__all__ = ["RACY_SECONDS", "component_names", "load_names", "store_names"]

RACY_SECONDS = _startup_cache.RACY_SECONDS
"""Files changed this recently (at store time) make the entry untrusted: nothing is stored."""


def load_names() -> list[str] | None:
    """Returns the cached component names, or None when no trustworthy entry exists."""
    text = _startup_cache.load(_startup_cache.COMPONENTS)
    if text is None:
        return None
    return text.split("\n") if text else []


def _module_paths() -> Iterator[str]:
    return stat_cache.module_files(list(sys.modules.values()), skip_stdlib=True)


def store_names(names: Iterable[str]) -> bool:
    """Stores ``names`` with the stat list of the current ``sys.modules``.

    Call it right after discovery, in the process that discovered. Errors are ignored.

    Args:
        names: the component names, in listing order.

    Returns:
        Whether an entry was written (False when it could not be trusted).
    """
    names = list(names)
    if any("\n" in name for name in names):
        return False
    return _startup_cache.store(_startup_cache.COMPONENTS, "\n".join(names), _module_paths())


def component_names() -> list[str]:
    """Returns the names of the valid components, from the cache or by discovery.

    On a miss it runs :func:`torchx.specs.finder.get_components` and stores the result
    unless discovery showed a warning.
    """
    names = load_names()
    if names is not None:
        return names

    from torchx.specs import finder  # lazy: the specs, ~10 ms: a cache hit imports none

    shown: list[bool] = []
    original = warnings.showwarning

    def showwarning(*args: object, **kwargs: object) -> None:
        shown.append(True)
        original(*args, **kwargs)  # type: ignore[arg-type]

    warnings.showwarning = showwarning
    try:
        names = list(finder.get_components())
    finally:
        warnings.showwarning = original
    if not shown:
        store_names(names)
    return names
