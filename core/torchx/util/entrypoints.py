"""Entry-point lookups (``torchx.util.entrypoints``).

Every lookup reads ``importlib.metadata`` at call time, so distributions installed (or put
on ``sys.path``) after import are found. A group that no ``entry_points.txt`` on ``sys.path``
mentions is answered without importing ``importlib.metadata`` (about 20 ms of a CLI start):
see :func:`group_may_have_entry_points`.

Example::

    from torchx.util.entrypoints import load, load_group

    get_image = load("torchx.version", "get_torchx_image", default=None)
    schedulers = load_group("torchx.schedulers", default={})
"""

from __future__ import annotations

import os
import sys
import time
from importlib.machinery import PathFinder

# ``torchx --help`` imports this module: no ``typing``/``difflib`` at run time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from importlib.metadata import EntryPoint
    from typing import Any

__all__ = ["group_may_have_entry_points", "load", "load_group", "select"]


class _NoDefault:
    """Marker for "no default given" so that ``default=None`` can be returned as a value."""

    def __repr__(self) -> str:
        return "<no default>"


_NO_DEFAULT: Any = _NoDefault()


def select(group: str) -> list[EntryPoint]:
    """Returns the entry points of ``group`` in discovery order (may be empty).

    Args:
        group: the entry-point group, e.g. ``"torchx.schedulers"``.

    Returns:
        The entry points of the group, read from ``importlib.metadata``.
    """
    if not group_may_have_entry_points(group):
        return []
    from importlib import metadata  # lazy: ~20 ms; skipped when no entry_points.txt names the group

    eps: Any = metadata.entry_points()
    if hasattr(eps, "select"):
        return list(eps.select(group=group))
    return list(eps.get(group, ()))  # a dict {group: [EntryPoint]} (older importlib API)


def load(group: str, name: str, default: Any = _NO_DEFAULT) -> Any:
    """Loads the object that the entry point ``name`` of ``group`` points to.

    Args:
        group: the entry-point group, e.g. ``"torchx.version"``.
        name: the entry-point name inside the group.
        default: returned when the group has no entry point called ``name``.

    Returns:
        The loaded object (``module:attr`` gives the attribute, ``module`` the module), or
        ``default`` when the entry point does not exist.

    Raises:
        KeyError: the entry point does not exist and no ``default`` was given.
    """
    eps = {ep.name: ep for ep in select(group)}
    ep = eps.get(name)
    if ep is not None:
        return ep.load()
    if default is not _NO_DEFAULT:
        return default
    raise KeyError(_missing_message(group, name, list(eps)))


def _missing_message(group: str, name: str, names: list[str]) -> str:
    msg = f"No entry point `{name}` in group `{group}`."
    import difflib  # lazy: difflib ~14 ms here; torchx --help skips it

    close = difflib.get_close_matches(name, names, n=1)
    if close:
        return f"{msg} Did you mean `{close[0]}`?"
    if names:
        return f"{msg} Registered entry points: {sorted(names)}"
    return f'{msg} Install a package that declares it under [project.entry-points."{group}"].'


def _deferred(ep: EntryPoint) -> Callable[..., Any]:
    """Returns a function that loads ``ep`` only when called.

    Calling it with ``module:attr`` imports the module and calls the attribute with the given
    arguments; for a bare ``module`` entry point it returns the imported module.
    """

    def run(*args: Any, **kwargs: Any) -> Any:
        if ep.attr is None:
            return ep.load()
        return ep.load()(*args, **kwargs)

    run.__name__ = ep.name
    run.__qualname__ = ep.name
    run.__doc__ = f"Deferred entry point `{ep.name} = {ep.value}` (group `{ep.group}`)."
    return run


def load_group(
    group: str,
    default: Mapping[str, Any] | None = None,
    skip_defaults: bool = False,
) -> Any:
    """Returns every entry point of ``group`` as ``{name: deferred_load_fn}``.

    Nothing is imported here: ``load_group("g")["name"](*args)`` imports ``module`` and calls
    ``module.attr(*args)`` (or returns the module for a ``module``-only entry point). When the
    group has entry points, only those are returned: they replace ``default``, they are not
    merged with it.

    Args:
        group: the entry-point group.
        default: returned when the group has no entry points.
        skip_defaults: when True, an empty group gives ``None`` even if ``default`` is set.

    Returns:
        ``{name: fn}`` for a non-empty group; otherwise ``default`` (``None`` with
        ``skip_defaults``).
    """
    eps = select(group)
    if not eps:
        return None if skip_defaults else default
    return {ep.name: _deferred(ep) for ep in eps}


def group_may_have_entry_points(group: str) -> bool:
    """Cheaply tells whether any installed distribution might declare entry points in ``group``.

    Scans the ``entry_points.txt`` of the ``*.dist-info``/``*.egg-info`` directories on
    ``sys.path`` for the group name (a few milliseconds, versus ~20-50 ms for importing
    ``importlib.metadata``). It answers True (so the caller does the real lookup) whenever it
    cannot be sure: zip or egg path entries, or custom distribution finders.

    The scan is reused while ``sys.path`` and the mtimes of its directories are unchanged (a
    distribution installed or removed there changes them), unless one of those directories
    changed in the last two seconds, within the file system's mtime granularity.

    Args:
        group: the entry-point group name.
    """
    if _custom_distribution_finders() or _entry_points_replaced():
        return True
    declared = _declared_entry_points()
    return declared is None or f"[{group}]".encode() in declared


def _entry_points_replaced() -> bool:
    """Whether ``importlib.metadata.entry_points`` was replaced (a test's ``mock.patch``).

    The file scan cannot see what a replacement returns.
    """
    md = sys.modules.get("importlib.metadata")
    fn = getattr(md, "entry_points", None)
    return fn is not None and getattr(fn, "__module__", None) != "importlib.metadata"


def __getattr__(name: str) -> Any:
    # ``torchx.util.entrypoints.metadata`` (TorchX's module imports it), without importing
    # importlib.metadata when this module is imported
    if name == "metadata":
        from importlib import metadata  # lazy: ~20 ms; TorchX's module attribute, on first use

        return metadata
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# (sys.path entries, their mtimes, what _scan_entry_points found for them)
_scanned: tuple[tuple[str, ...], tuple[int, ...], bytes | None] | None = None
_RACY_NS = 2_000_000_000


def _mtime_ns(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _declared_entry_points() -> bytes | None:
    """Every ``entry_points.txt`` on ``sys.path``, spaces removed; None when uncertain."""
    global _scanned
    paths = tuple(entry or os.getcwd() for entry in sys.path)
    mtimes = tuple(_mtime_ns(path) for path in paths)
    if _scanned is not None and _scanned[:2] == (paths, mtimes):
        return _scanned[2]

    now = time.time_ns()
    declared = _scan_entry_points(paths, mtimes, now)
    if max(mtimes, default=-1) < now - _RACY_NS:
        _scanned = (paths, mtimes, declared)
    return declared


# {path entry: (its mtime, its entry_points.txt files)}: the entries that had not changed for
# two seconds, so that one recently changed entry (a working directory on sys.path that is
# being edited) rescans only itself, not every distribution of site-packages
_by_path: dict[str, tuple[int, bytes | None]] = {}


def _scan_entry_points(paths: tuple[str, ...], mtimes: tuple[int, ...], now: int) -> bytes | None:
    found: list[bytes] = []
    for path, mtime in zip(paths, mtimes, strict=True):
        cached = _by_path.get(path)
        if cached is not None and cached[0] == mtime:
            declared = cached[1]
        else:
            dists = _dist_info_dirs([path])
            declared = None if dists is None else b"\n".join(map(_read_entry_points, dists))
            if 0 <= mtime < now - _RACY_NS:
                _by_path[path] = (mtime, declared)
        if declared is None:
            return None
        found.append(declared)
    return b"\n".join(found)


def _dist_info_dirs(paths: Iterable[str]) -> list[str] | None:
    """The ``*.dist-info``/``*.egg-info`` dirs directly in ``paths``, in order.

    None when a path entry is a file (a zip) or holds an ``.egg``: entry points there cannot be
    found by listing directories.
    """
    found: list[str] = []
    for path in paths:
        if os.path.isfile(path):
            return None
        try:
            it = os.scandir(path)
        except OSError:
            continue
        with it:
            for d in it:
                if d.name.endswith(".egg"):
                    return None
                if d.name.endswith((".dist-info", ".egg-info")):
                    found.append(d.path)
    return found


def _read_entry_points(dist_dir: str) -> bytes:
    # os.open/os.read: most distributions have no entry_points.txt, and file objects cost
    # more than the system calls for these small files (a third of the scan)
    try:
        fd = os.open(os.path.join(dist_dir, "entry_points.txt"), os.O_RDONLY)
    except OSError:
        return b""
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    except OSError:
        return b""
    finally:
        os.close(fd)
    return b"".join(chunks).replace(b" ", b"")


# finders that look for distributions where PathFinder does (the dist-info/egg-info dirs of
# sys.path, zips aside): the importlib_metadata backport installs one when imported (Airflow
# does), and the scan sees what it finds
_PATH_DIR_FINDERS = {("importlib_metadata", "MetadataPathFinder")}


def _custom_distribution_finders() -> bool:
    return any(
        finder is not PathFinder
        and hasattr(finder, "find_distributions")
        and _finder_name(finder) not in _PATH_DIR_FINDERS
        for finder in sys.meta_path
    )


def _finder_name(finder: object) -> tuple[str, str]:
    cls = finder if isinstance(finder, type) else type(finder)
    return cls.__module__, cls.__qualname__
