"""A cached index of the component names ``torchx builtins`` lists (private).

Listing the components means importing every component module, linting each function and
reading the ``torchx.components`` entry points: most of a ``torchx builtins`` start. The
names found are stored under ``$TORCHX_HOME/cache/`` next to a *stat list*: the
``(mtime, size)`` of every file and directory the result could depend on, so that a later
start that finds them all unchanged prints the names without importing ``torchx.specs``.

The stat list holds:

* every ``sys.path`` entry (a distribution installed or removed there changes its mtime),
  and in each, the ``entry_points.txt`` of every ``*.dist-info``/``*.egg-info`` directory,
  present or not (entry points edited in place);
* the file of every imported module outside the standard library (component modules, their
  imports, ``torchx`` itself), every package directory that may have been searched for
  submodules and that directory's sub-directories (a new ``__init__.py`` makes a
  sub-directory a package).

The entry is keyed by the interpreter, its version and ``sys.path``. Nothing is stored when
it could not be trusted: discovery showed a warning (a module that failed to import), a
path is a zip or egg, a custom distribution finder is installed, or a recorded file changed
in the last :data:`RACY_SECONDS` (a second change within the file system's mtime
granularity could go unnoticed). Any error reading or writing the cache falls back to
discovery.
"""

from __future__ import annotations

import os
import sys

from torchx.util import stat_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

__all__ = [
    "MAX_ENTRIES",
    "RACY_SECONDS",
    "component_names",
    "index_path",
    "load_names",
    "store_names",
]

_FORMAT = "torchx-component-index 1"

RACY_SECONDS = stat_cache.RACY_SECONDS
"""Files changed this recently (at store time) make the entry untrusted: nothing is stored."""

MAX_ENTRIES = 16
"""Indexes kept in the cache directory (each ``sys.path``, e.g. each working directory of
``python -m torchx.cli.main``, has its own); the least recently written go first."""


def _key() -> str:
    # absolute: "" (``python -c``/``-m``) and relative entries name the working directory
    return "\x1f".join([sys.executable, sys.version, *map(os.path.abspath, sys.path)])


def index_path() -> str:
    """Returns the cache file of this interpreter and ``sys.path`` (not created).

    The file lives in ``$TORCHX_HOME/cache`` (default ``~/.torchx/cache``); its name carries
    a CRC of the key so that several environments sharing a home do not evict each other.
    """
    return stat_cache.cache_file("components-", _key(), ".txt")


def load_names() -> list[str] | None:
    """Returns the cached component names, or None when no trustworthy entry exists."""
    try:
        with open(index_path(), encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().split("\n")
    except OSError:
        return None
    if len(lines) < 3 or lines[0] != _FORMAT or lines[1] != "key " + _key():
        return None
    names: list[str] = []
    for line in lines[2:]:
        kind, _, rest = line.partition(" ")
        if kind == "stat":
            sig, _, path = rest.partition(" ")
            if stat_cache.signature(path) != sig:
                return None
        elif kind == "name":
            names.append(rest)
        elif kind == "end":
            return names
        else:
            return None
    return None  # truncated: no end marker


def _path_entries() -> list[str] | None:
    """Every ``sys.path`` entry and the ``entry_points.txt`` of each distribution on it."""
    return stat_cache.path_entries()


def _module_paths() -> Iterator[str]:
    return stat_cache.module_files(list(sys.modules.values()), skip_stdlib=True)


def store_names(names: Iterable[str]) -> bool:
    """Stores ``names`` with the stat list of the current ``sys.path`` and ``sys.modules``.

    Call it right after discovery, in the process that discovered. Errors are ignored.

    Args:
        names: the component names, in listing order.

    Returns:
        Whether an entry was written (False when it could not be trusted).
    """
    entries = _path_entries()
    if entries is None:
        return False
    names = list(names)
    stats = stat_cache.stat_list([*entries, *_module_paths()], RACY_SECONDS)
    if stats is None or any("\n" in text for text in [*(p for p, _ in stats), *names, _key()]):
        return False
    lines = [_FORMAT, "key " + _key()]
    lines += [f"stat {sig} {path}" for path, sig in stats]
    lines += [f"name {name}" for name in names]
    lines.append("end")
    path = index_path()
    text = "\n".join(lines) + "\n"
    if not stat_cache.write_atomic(path, text.encode("utf-8", "surrogateescape")):
        return False
    stat_cache.evict(os.path.dirname(path), "components-", ".txt", MAX_ENTRIES)
    return True


def component_names() -> list[str]:
    """Returns the names of the valid components, from the cache or by discovery.

    On a miss it runs :func:`torchx.specs.finder.get_components` and stores the result
    unless discovery showed a warning.
    """
    names = load_names()
    if names is not None:
        return names
    import warnings

    from torchx.specs import finder

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
