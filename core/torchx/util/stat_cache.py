"""Building blocks of the start-up caches keyed on a *stat list* of files.

Three caches skip slow work at start-up when nothing it depends on changed: the CLI's
component index (``torchx builtins``), the CLI's ``--help`` text and ``dag_from_pipeline``'s
parse cache (``torchx_airflow``). Each stores its result under ``$TORCHX_HOME/cache/`` (default
``~/.torchx/cache``) next to the ``(mtime, size)`` of every file and directory the result
could depend on, and trusts it only while all of them are unchanged. This module holds what
they share:

* :func:`signature` of one path, :func:`stat_list` of many (None when one changed in the last
  :data:`RACY_SECONDS`: a second change within the file system's mtime granularity could go
  unnoticed) and :func:`unchanged`;
* what to record: :func:`path_entries` (every ``sys.path`` entry and the ``entry_points.txt``
  of every distribution on it, present or not, so an installed, removed or edited plugin
  shows) and :func:`module_files` (the files and package directories of modules);
* where and how: :func:`cache_file`, :func:`write_atomic` and :func:`evict`.

Only ``os`` and ``sys`` are imported at module level: the callers run on the start-up path.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import types
    from collections.abc import Iterable, Iterator

__all__ = [
    "ABSENT",
    "RACY_SECONDS",
    "cache_file",
    "evict",
    "module_files",
    "package_dirs",
    "path_entries",
    "signature",
    "stat_list",
    "unchanged",
    "write_atomic",
]

ABSENT = "-"
"""The :func:`signature` of a path that does not exist."""

RACY_SECONDS = 2.0
"""Files changed this recently (at store time) make an entry untrusted: nothing is stored."""


def signature(path: str) -> str:
    """Returns ``"<mtime_ns>:<size>"`` of ``path``, or :data:`ABSENT`."""
    try:
        st = os.stat(path)
    except OSError:
        return ABSENT
    return f"{st.st_mtime_ns}:{st.st_size}"


def stat_list(
    paths: Iterable[str], racy_seconds: float = RACY_SECONDS
) -> list[tuple[str, str]] | None:
    """Returns ``(path, signature)`` of each path, or None when one changed too recently.

    Args:
        paths: the files and directories an entry depends on (duplicates are dropped).
        racy_seconds: how recent a change makes the list untrusted.
    """
    racy_after = time.time_ns() - int(racy_seconds * 1e9)
    stats = []
    for path in dict.fromkeys(paths):
        sig = signature(path)
        if sig != ABSENT and int(sig.partition(":")[0]) >= racy_after:
            return None
        stats.append((path, sig))
    return stats


def unchanged(stats: Iterable[tuple[str, str]]) -> bool:
    """Whether every recorded ``(path, signature)`` still holds."""
    return all(signature(path) == sig for path, sig in stats)


def path_entries() -> list[str] | None:
    """Every ``sys.path`` entry (absolute) and the ``entry_points.txt`` of each distribution.

    Returns:
        The paths, or None when distributions cannot all be found by listing directories: a
        zip or an ``.egg`` on ``sys.path``, or a custom distribution finder installed.
    """
    from torchx.util.entrypoints import (  # lazy: ~2 ms; a warm start-up cache skips it
        _custom_distribution_finders,
        _dist_info_dirs,
    )

    if _custom_distribution_finders():
        return None
    paths = [os.path.abspath(entry) for entry in sys.path]
    dists = _dist_info_dirs(paths)
    if dists is None:
        return None
    return [*paths, *(os.path.join(d, "entry_points.txt") for d in dists)]


def package_dirs(dirs: Iterable[str]) -> Iterator[str]:
    """Yields each directory and its sub-directories (a new ``__init__.py`` makes a package)."""
    for directory in dirs:
        yield directory
        try:
            it = os.scandir(directory)
        except OSError:
            continue
        with it:
            for d in it:
                if d.name != "__pycache__" and d.is_dir():
                    yield d.path


def _stdlib_paths() -> tuple[str, tuple[str, ...]]:
    import sysconfig  # lazy: sysconfig ~2 ms; torchx --help skips it

    paths = sysconfig.get_paths()
    site = (os.path.join(paths["purelib"], ""), os.path.join(paths["platlib"], ""))
    return os.path.join(paths["stdlib"], ""), site


def module_files(
    modules: Iterable[types.ModuleType | None], skip_stdlib: bool = False
) -> Iterator[str]:
    """Yields the file of each module and its package directories (see :func:`package_dirs`).

    Args:
        modules: the modules (None entries of ``sys.modules`` are skipped).
        skip_stdlib: leave out the standard library's files (it changes only with the Python
            version, which the caller's key holds).
    """
    stdlib, site = _stdlib_paths() if skip_stdlib else ("\0", ())

    def keep(path: str) -> bool:
        return not path.startswith(stdlib) or path.startswith(site)

    for module in modules:
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and keep(file):
            yield file
        try:
            path = list(getattr(module, "__path__", None) or ())
        except TypeError:  # a __path__ that is no path list (torch._classes)
            continue
        yield from package_dirs(p for p in path if isinstance(p, str) and keep(p))


def cache_file(prefix: str, key: str, suffix: str) -> str:
    """Returns ``$TORCHX_HOME/cache/<prefix><crc32 of key><suffix>`` (not created).

    The CRC in the name lets several environments sharing a home keep their own entries.
    """
    import binascii  # lazy: 0.15 ms; 'torchx run' never calls this

    home = os.path.expanduser(os.environ.get("TORCHX_HOME") or "~/.torchx")
    crc = binascii.crc32(key.encode("utf-8", "surrogateescape"))
    return os.path.join(home, "cache", f"{prefix}{crc:08x}{suffix}")


def write_atomic(path: str, data: bytes) -> bool:
    """Writes ``data`` to ``path`` through a temporary file; False on any ``OSError``."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True


def evict(directory: str, prefix: str, suffix: str, keep: int) -> None:
    """Keeps the ``keep`` most recently written ``<prefix>*<suffix>`` files of ``directory``."""
    try:
        with os.scandir(directory) as it:
            found = [
                (d.stat().st_mtime_ns, d.path)
                for d in it
                if d.name.startswith(prefix) and d.name.endswith(suffix)
            ]
        for _, old in sorted(found, reverse=True)[keep:]:
            os.unlink(old)
    except OSError:
        pass
