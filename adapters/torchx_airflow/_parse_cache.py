"""The parse cache of ``dag_from_pipeline`` (private): a pipeline file's DAG plan as JSON.

Airflow parses every DAG file again and again, and loading a pipeline file costs far more
than the DAG it gives: ``torchx.workflow`` (pydantic models, ``yaml``) and the registry check
(the component finder, named resources, schedulers). So ``dag_from_pipeline`` keeps the *plan*
it built from a file (the pipeline's name and description, the DAG params, the operator
arguments of every step and the edges, all plain JSON) under ``$TORCHX_HOME/cache/`` (like
the CLI's component index; default ``~/.torchx/cache``), next to a *stat list*: the
``(mtime, size)`` of every file the plan or its validation could depend on. A later parse
that finds them all unchanged builds the DAG from the plan without loading the pipeline.

The stat list holds the pipeline file; every ``sys.path`` entry and the ``entry_points.txt``
of every distribution on it, present or not (a component, scheduler or named-resource plugin
installed, removed or edited); the ``.torchxconfig`` files the check reads (component
defaults), present or not; the file of every module the check imported, of every ``torchx``
and ``torchx_airflow`` module and of each component file named by path, and their package
directories with their sub-directories (a new component module). The key holds the
interpreter, its version, ``sys.path``, the working directory, ``$TORCHXCONFIG``, the
pipeline's absolute path and ``param_jinja``.

Nothing is stored when it could not be trusted: a recorded file changed in the last
:data:`RACY_SECONDS` (a second change within the file system's mtime granularity could go
unnoticed), a zip or egg on ``sys.path``, a custom distribution finder, or a plan that does
not survive JSON unchanged. A missing, corrupt or unreadable entry is a miss (the pipeline is
loaded and validated as without a cache, so errors read the same), never an error.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Optional

__all__ = ["MAX_ENTRIES", "RACY_SECONDS", "cache_path", "load_plan", "store_plan"]

RACY_SECONDS = 2.0
"""Files changed this recently (at store time) make the entry untrusted: nothing is stored."""

MAX_ENTRIES = 64
"""Entries kept (one per DAG file and environment); the least recently written go first."""

_FORMAT = "torchx-airflow-dag-plan 1"
_OWN = ("torchx", "torchx_airflow")  # their modules count even when imported before loading
_ABSENT = "-"
# finders that look where PathFinder does (the importlib_metadata backport's, which Airflow
# installs): the dist-info scan sees what they find
_PATH_DIR_FINDERS = {("importlib_metadata", "MetadataPathFinder")}


def _signature(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return _ABSENT
    return f"{st.st_mtime_ns}:{st.st_size}"


def _key(source: str, param_jinja: Optional[Mapping[str, str]]) -> str:
    return json.dumps(
        [
            sys.executable,
            sys.version,
            [os.path.abspath(p) for p in sys.path],
            os.getcwd(),
            os.environ.get("TORCHXCONFIG"),
            os.path.abspath(source),
            sorted((param_jinja or {}).items()),
        ]
    )


def cache_path(source: str, param_jinja: Optional[Mapping[str, str]] = None) -> str:
    """Returns the cache file of ``source`` in this environment (not created).

    Args:
        source: the pipeline file.
        param_jinja: the ``param_jinja`` of ``dag_from_pipeline``.
    """
    import binascii

    home = os.path.expanduser(os.environ.get("TORCHX_HOME") or "~/.torchx")
    crc = binascii.crc32(_key(source, param_jinja).encode("utf-8", "surrogateescape"))
    return os.path.join(home, "cache", f"dag-plan-{crc:08x}.json")


def load_plan(source: str, param_jinja: Optional[Mapping[str, str]] = None) -> Any:
    """Returns the stored plan of ``source``, or None when no valid entry exists.

    Args:
        source: the pipeline file.
        param_jinja: the ``param_jinja`` of ``dag_from_pipeline``.
    """
    import binascii

    try:
        with open(cache_path(source, param_jinja), "rb") as f:
            head, _, body = f.read().partition(b"\n")
        fmt, _, crc = head.decode().rpartition(" ")
        if fmt != _FORMAT or int(crc, 16) != binascii.crc32(body):
            return None
        entry = json.loads(body)
        if entry["key"] != _key(source, param_jinja):
            return None
        for path, sig in entry["stats"]:
            if _signature(path) != sig:
                return None
        return entry["plan"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _exact(value: Any) -> bool:
    """Whether ``value`` is plain JSON data that loads back as the same types."""
    if value is None or type(value) in (str, int, float, bool):
        return True
    if type(value) is list:
        return all(map(_exact, value))
    if type(value) is dict:
        return all(type(k) is str and _exact(v) for k, v in value.items())
    return False


def _uncertain_distributions() -> bool:
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        cls = finder if isinstance(finder, type) else type(finder)
        name = (cls.__module__, cls.__qualname__)
        custom = finder is not PathFinder and hasattr(finder, "find_distributions")
        if custom and name not in _PATH_DIR_FINDERS:
            return True
    return False


def _path_entries() -> Optional[list[str]]:
    """Every ``sys.path`` entry and the ``entry_points.txt`` of each distribution on it."""
    paths = [os.path.abspath(entry) for entry in sys.path]
    found = list(paths)
    for path in paths:
        if os.path.isfile(path):
            return None  # a zip: its distributions cannot be listed here
        try:
            it = os.scandir(path)
        except OSError:
            continue
        with it:
            for d in it:
                if d.name.endswith(".egg"):
                    return None
                if d.name.endswith((".dist-info", ".egg-info")):
                    found.append(os.path.join(d.path, "entry_points.txt"))
    return found


def _config_files() -> list[str]:
    explicit = os.environ.get("TORCHXCONFIG")
    if explicit is not None:
        return [os.path.abspath(explicit)] if explicit else []
    dirs = (os.path.expanduser("~"), os.getcwd())
    return [os.path.join(d, ".torchxconfig") for d in dirs]


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


def _module_paths(names: Iterable[str]) -> Iterator[str]:
    for name in names:
        module = sys.modules.get(name)
        file = getattr(module, "__file__", None)
        if isinstance(file, str):
            yield file
        try:
            path = list(getattr(module, "__path__", None) or ())
        except TypeError:  # a __path__ that is no path list
            continue
        yield from _package_dirs(p for p in path if isinstance(p, str))


def store_plan(
    source: str,
    param_jinja: Optional[Mapping[str, str]],
    plan: Any,
    modules_before: Iterable[str],
    component_files: Iterable[str] = (),
) -> bool:
    """Stores ``plan`` with the stat list of what it depends on. Errors are ignored.

    Call it right after the pipeline was loaded and validated, in that process.

    Args:
        source: the pipeline file.
        param_jinja: the ``param_jinja`` of ``dag_from_pipeline``.
        plan: the plan (plain JSON data).
        modules_before: ``sys.modules`` before loading (the modules loading imported count).
        component_files: the files of components named by path (``file.py:fn``).

    Returns:
        Whether an entry was written (False when it could not be trusted).
    """
    import time

    if not _exact(plan) or _uncertain_distributions():
        return False
    entries = _path_entries()
    if entries is None:
        return False
    before = set(modules_before)
    mods = [n for n in list(sys.modules) if n not in before or n.split(".")[0] in _OWN]
    files = [os.path.abspath(source), *entries, *_config_files(), *component_files]
    paths = list(dict.fromkeys([*files, *_module_paths(mods)]))
    racy_after = time.time_ns() - int(RACY_SECONDS * 1e9)
    stats = []
    for path in paths:
        sig = _signature(path)
        if sig != _ABSENT and int(sig.partition(":")[0]) >= racy_after:
            return False
        stats.append([path, sig])
    entry = {"key": _key(source, param_jinja), "stats": stats, "plan": plan}
    return _write(cache_path(source, param_jinja), json.dumps(entry).encode())


def _write(path: str, body: bytes) -> bool:
    import binascii

    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(f"{_FORMAT} {binascii.crc32(body):08x}\n".encode() + body)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    _evict(os.path.dirname(path))
    return True


def _evict(directory: str) -> None:
    """Keeps the :data:`MAX_ENTRIES` most recently written entries."""
    try:
        with os.scandir(directory) as it:
            found = [
                (d.stat().st_mtime_ns, d.path)
                for d in it
                if d.name.startswith("dag-plan-") and d.name.endswith(".json")
            ]
        for _, old in sorted(found, reverse=True)[MAX_ENTRIES:]:
            os.unlink(old)
    except OSError:
        pass
