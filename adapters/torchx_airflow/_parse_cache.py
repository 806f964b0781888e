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

import binascii
import json
import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from torchx.util import stat_cache

__all__ = ["MAX_ENTRIES", "RACY_SECONDS", "cache_path", "load_plan", "store_plan"]

RACY_SECONDS = stat_cache.RACY_SECONDS
"""Files changed this recently (at store time) make the entry untrusted: nothing is stored."""

MAX_ENTRIES = 64
"""Entries kept (one per DAG file and environment); the least recently written go first."""

_FORMAT = "torchx-airflow-dag-plan 1"
_PREFIX, _SUFFIX = "dag-plan-", ".json"  # entry file names in the cache directory
_OWN = ("torchx", "torchx_airflow")  # their modules count even when imported before loading


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


def _file(key: str) -> str:
    return stat_cache.cache_file(_PREFIX, key, _SUFFIX)


def cache_path(source: str, param_jinja: Optional[Mapping[str, str]] = None) -> str:
    """Returns the cache file of ``source`` in this environment (not created).

    Args:
        source: the pipeline file.
        param_jinja: the ``param_jinja`` of ``dag_from_pipeline``.
    """
    return _file(_key(source, param_jinja))


def load_plan(source: str, param_jinja: Optional[Mapping[str, str]] = None) -> Any:
    """Returns the stored plan of ``source``, or None when no valid entry exists.

    Args:
        source: the pipeline file.
        param_jinja: the ``param_jinja`` of ``dag_from_pipeline``.
    """
    key = _key(source, param_jinja)
    try:
        with open(_file(key), "rb") as f:
            head, _, body = f.read().partition(b"\n")
        fmt, _, crc = head.decode().rpartition(" ")
        if fmt != _FORMAT or int(crc, 16) != binascii.crc32(body):
            return None
        entry = json.loads(body)
        if entry["key"] != key:
            return None
        if not stat_cache.unchanged(entry["stats"]):
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


def _config_files() -> list[str]:
    explicit = os.environ.get("TORCHXCONFIG")
    if explicit is not None:
        return [os.path.abspath(explicit)] if explicit else []
    dirs = (os.path.expanduser("~"), os.getcwd())
    return [os.path.join(d, ".torchxconfig") for d in dirs]


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
    if not _exact(plan):
        return False
    entries = stat_cache.path_entries()
    if entries is None:
        return False
    before = set(modules_before)
    mods = [m for n, m in list(sys.modules.items()) if n not in before or n.split(".")[0] in _OWN]
    files = [os.path.abspath(source), *entries, *_config_files(), *component_files]
    stats = stat_cache.stat_list([*files, *stat_cache.module_files(mods)], RACY_SECONDS)
    if stats is None:
        return False
    key = _key(source, param_jinja)
    entry = {"key": key, "stats": stats, "plan": plan}
    return _write(_file(key), json.dumps(entry).encode())


def _write(path: str, body: bytes) -> bool:
    head = f"{_FORMAT} {binascii.crc32(body):08x}\n".encode()
    if not stat_cache.write_atomic(path, head + body):
        return False
    stat_cache.evict(os.path.dirname(path), _PREFIX, _SUFFIX, MAX_ENTRIES)
    return True
