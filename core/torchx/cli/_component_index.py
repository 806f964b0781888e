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

from torchx.util.entrypoints import _custom_distribution_finders as _uncertain_distributions
from torchx.util.entrypoints import _dist_info_dirs

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
_ABSENT = "-"

RACY_SECONDS = 2.0
"""Files changed this recently (at store time) make the entry untrusted: nothing is stored."""

MAX_ENTRIES = 16
"""Indexes kept in the cache directory (each ``sys.path``, e.g. each working directory of
``python -m torchx.cli.main``, has its own); the least recently written go first."""


def _signature(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return _ABSENT
    return f"{st.st_mtime_ns}:{st.st_size}"


def _key() -> str:
    # absolute: "" (``python -c``/``-m``) and relative entries name the working directory
    return "\x1f".join([sys.executable, sys.version, *map(os.path.abspath, sys.path)])


def index_path() -> str:
    """Returns the cache file of this interpreter and ``sys.path`` (not created).

    The file lives in ``$TORCHX_HOME/cache`` (default ``~/.torchx/cache``); its name carries
    a CRC of the key so that several environments sharing a home do not evict each other.
    """
    import binascii

    home = os.path.expanduser(os.environ.get("TORCHX_HOME") or "~/.torchx")
    crc = binascii.crc32(_key().encode("utf-8", "surrogateescape"))
    return os.path.join(home, "cache", f"components-{crc:08x}.txt")


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
            if _signature(path) != sig:
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
    paths = [entry or os.getcwd() for entry in sys.path]
    dists = _dist_info_dirs(paths)
    if dists is None:
        return None
    return [*paths, *(os.path.join(d, "entry_points.txt") for d in dists)]


def _package_dirs(dirs: Iterable[str]) -> Iterator[str]:
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


def _is_stdlib(path: str, stdlib: str, site: tuple[str, ...]) -> bool:
    return path.startswith(stdlib) and not path.startswith(site)


def _module_paths() -> Iterator[str]:
    import sysconfig

    # the standard library changes only with the Python version, which is part of the key
    paths = sysconfig.get_paths()
    stdlib = os.path.join(paths["stdlib"], "")
    site = (os.path.join(paths["purelib"], ""), os.path.join(paths["platlib"], ""))
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and not _is_stdlib(file, stdlib, site):
            yield file
        try:
            path = list(getattr(module, "__path__", None) or ())
        except TypeError:  # a __path__ that is no path list (torch._classes)
            continue
        dirs = [p for p in path if isinstance(p, str) and not _is_stdlib(p, stdlib, site)]
        yield from _package_dirs(dirs)


def store_names(names: Iterable[str]) -> bool:
    """Stores ``names`` with the stat list of the current ``sys.path`` and ``sys.modules``.

    Call it right after discovery, in the process that discovered. Errors are ignored.

    Args:
        names: the component names, in listing order.

    Returns:
        Whether an entry was written (False when it could not be trusted).
    """
    import time

    entries = None if _uncertain_distributions() else _path_entries()
    if entries is None:
        return False
    paths = list(dict.fromkeys([*entries, *_module_paths()]))
    names = list(names)
    if any("\n" in text for text in [*paths, *names, _key()]):
        return False
    racy_after = time.time_ns() - int(RACY_SECONDS * 1e9)
    lines = [_FORMAT, "key " + _key()]
    for path in paths:
        sig = _signature(path)
        if sig != _ABSENT and int(sig.partition(":")[0]) >= racy_after:
            return False
        lines.append(f"stat {sig} {path}")
    lines += [f"name {name}" for name in names]
    lines.append("end")
    path = index_path()
    if not _write(path, "\n".join(lines) + "\n"):
        return False
    _evict(os.path.dirname(path))
    return True


def _evict(directory: str, prefix: str = "components-") -> None:
    """Keeps the :data:`MAX_ENTRIES` most recently written ``prefix*.txt`` entries."""
    try:
        with os.scandir(directory) as it:
            found = [
                (d.stat().st_mtime_ns, d.path)
                for d in it
                if d.name.startswith(prefix) and d.name.endswith(".txt")
            ]
        for _, old in sorted(found, reverse=True)[MAX_ENTRIES:]:
            os.unlink(old)
    except OSError:
        pass


def _write(path: str, text: str) -> bool:
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
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
