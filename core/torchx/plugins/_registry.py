"""The plugin registry: discovers plugins in ``torchx_plugins.*`` namespaces and entry points.

``registry()`` is a process-wide, ``lru_cache(1)`` :class:`PluginRegistry`. Discovery per plugin
type happens on the first ``get``/``info``/``load_errors`` of that type and is cached until
``clear()``. Problems are recorded as :class:`RegistrationError` (with a warning), never raised.
"""

from __future__ import annotations

import enum
import importlib
import os
import warnings
from _thread import RLock  # threading.RLock without importing threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from types import ModuleType
from typing import Any

from torchx.plugins._register import PLUGIN_NAME_ATTR, PLUGIN_TYPE_ATTR
from torchx.plugins._types import NAMESPACES, PluginInfo, PluginType, RegistrationError
from torchx.util import entrypoints

__all__ = [
    "ENV_TORCHX_PLUGINS_SOURCE",
    "NAMED_RESOURCES_ATTR",
    "PluginRegistry",
    "PluginSource",
    "PluginType",
    "RegistrationError",
    "registry",
]

ENV_TORCHX_PLUGINS_SOURCE = "TORCHX_PLUGINS_SOURCE"
NAMED_RESOURCES_ATTR = "NAMED_RESOURCES"
"""The module attribute (a dict ``{name: factory}``) that holds a module's named resources."""


class PluginSource(enum.IntFlag):
    """The discovery channels, as the bits of ``TORCHX_PLUGINS_SOURCE``."""

    NONE = 0
    NAMESPACE_PKG = 1
    ENTRYPOINT = 2


_NAMESPACE_BIT = int(PluginSource.NAMESPACE_PKG)
_ENTRY_POINT_BIT = int(PluginSource.ENTRYPOINT)

Factory = Callable[..., Any]


def _read_source() -> int:
    raw = os.environ.get(ENV_TORCHX_PLUGINS_SOURCE)
    if raw is None:
        return _NAMESPACE_BIT | _ENTRY_POINT_BIT
    if raw in ("0", "1", "2", "3"):
        return int(raw)
    raise ValueError(
        f"{ENV_TORCHX_PLUGINS_SOURCE}={raw!r} is invalid; expected one of 0 (none),"
        " 1 (namespace only), 2 (entry points only), 3 (both)."
    )


@dataclass
class _Plugins:
    """The discovered plugins of one type."""

    factories: dict[str, Factory] = field(default_factory=dict)
    infos: dict[str, PluginInfo] = field(default_factory=dict)
    errors: list[RegistrationError] = field(default_factory=list)

    def record(self, err: RegistrationError) -> None:
        self.errors.append(err)
        warnings.warn(str(err), stacklevel=4)


def _is_missing(err: ModuleNotFoundError, module: str) -> bool:
    missing = err.name or ""
    return bool(missing) and (module == missing or module.startswith(missing + "."))


def _namespace_dirs(paths: list[str], prefix: str) -> list[str]:
    """Sub-directories without ``__init__.py`` (implicit namespace packages)."""
    found = []
    for path in paths:
        try:
            entries = sorted(os.listdir(path))
        except OSError:
            continue
        for entry in entries:
            full = os.path.join(path, entry)
            if (
                entry.isidentifier()
                and os.path.isdir(full)
                and not os.path.exists(os.path.join(full, "__init__.py"))
            ):
                found.append(prefix + entry)
    return found


def _submodules(pkg: ModuleType) -> dict[str, bool]:
    """``{full name: is_package}`` of the direct children of ``pkg`` (``_`` names skipped)."""
    paths = [str(p) for p in getattr(pkg, "__path__", [])]
    prefix = pkg.__name__ + "."
    names: dict[str, bool] = {}
    import pkgutil  # lazy: pkgutil ~30 ms here; only for a plugin namespace package

    for info in pkgutil.iter_modules(paths, prefix):
        names.setdefault(info.name, info.ispkg)
    for name in _namespace_dirs(paths, prefix):
        names.setdefault(name, True)
    return {n: p for n, p in sorted(names.items()) if not n.rsplit(".", 1)[-1].startswith("_")}


def _walk(pkg: ModuleType, found: _Plugins, ptype: PluginType) -> Iterator[ModuleType]:
    """Yields ``pkg`` and every importable module below it, recording import errors."""
    yield pkg
    for name, is_pkg in _submodules(pkg).items():
        try:
            module = importlib.import_module(name)
        except Exception as e:
            found.record(RegistrationError(name, e, plugin_type=ptype))
            continue
        if is_pkg:
            yield from _walk(module, found, ptype)
        else:
            yield module


def _marked(obj: Any, ptype: PluginType) -> bool:
    try:
        return callable(obj) and getattr(obj, PLUGIN_TYPE_ATTR, None) == ptype
    except Exception:
        return False


def _collect(module: ModuleType, ptype: PluginType) -> list[tuple[str, Factory]]:
    """The plugins ``module`` defines: marked callables (and its ``NAMED_RESOURCES``)."""
    found: list[tuple[str, Factory]] = []
    if ptype is PluginType.NAMED_RESOURCE:
        table = vars(module).get(NAMED_RESOURCES_ATTR)
        if isinstance(table, dict):
            found += [(str(k), v) for k, v in table.items() if callable(v)]
    for attr, obj in list(vars(module).items()):
        if _marked(obj, ptype) and getattr(obj, "__module__", None) == module.__name__:
            item = (getattr(obj, PLUGIN_NAME_ATTR, None) or attr, obj)
            if not any(n == item[0] and f is obj for n, f in found):
                found.append(item)
    return found


def _same(ptype: PluginType, a: Factory, b: Factory) -> bool:
    if a is b:
        return True
    if ptype is not PluginType.NAMED_RESOURCE:
        return False
    try:
        return bool(a() == b())
    except Exception:
        return False


def _target(fn: Factory) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


class PluginRegistry:
    """Plugins of every :class:`PluginType`, discovered lazily per type.

    Sources (``TORCHX_PLUGINS_SOURCE``: ``0`` none, ``1`` namespace only, ``2`` entry points only,
    ``3`` both, the default): the namespace package of the type (``torchx_plugins.schedulers``,
    ``torchx_plugins.named_resources``, ``torchx_plugins.tracker``), imported recursively, and
    the entry-point group named by the type's value. On a name in both, the entry point wins.

    Args:
        source: overrides ``TORCHX_PLUGINS_SOURCE`` (same 0-3 values).
        plugin_sources: TorchX's keyword for ``source`` (a :class:`PluginSource`).

    Raises:
        ValueError: ``TORCHX_PLUGINS_SOURCE`` is not one of 0, 1, 2, 3.
    """

    def __init__(self, source: int | None = None, *, plugin_sources: int | None = None) -> None:
        if source is None:
            source = plugin_sources
        self._source = _read_source() if source is None else int(source)
        self._lock = RLock()
        self._plugins: dict[PluginType, _Plugins] = {}
        self._loading: set[PluginType] = set()

    def _load(self, plugin_type: PluginType) -> _Plugins:
        ptype = PluginType(plugin_type)
        with self._lock:
            cached = self._plugins.get(ptype)
            if cached is not None:
                return cached
            if ptype in self._loading:
                raise RuntimeError(
                    f"re-entrant plugin lookup: `{ptype.value}` plugins are being discovered on"
                    " this thread; do not query the plugin registry at import time of a plugin"
                )
            self._loading.add(ptype)
            try:
                found = _Plugins()
                if self._source & _NAMESPACE_BIT:
                    self._scan_namespace(ptype, found)
                if self._source & _ENTRY_POINT_BIT:
                    self._scan_entry_points(ptype, found)
                self._plugins[ptype] = found
                return found
            finally:
                self._loading.discard(ptype)

    def _scan_namespace(self, ptype: PluginType, found: _Plugins) -> None:
        root = NAMESPACES[ptype]
        importlib.invalidate_caches()
        try:
            pkg = importlib.import_module(root)
        except ModuleNotFoundError as e:
            if not _is_missing(e, root):
                found.record(RegistrationError(root, e, plugin_type=ptype))
            return
        except Exception as e:
            found.record(RegistrationError(root, e, plugin_type=ptype))
            return
        for module in _walk(pkg, found, ptype):
            for name, fn in _collect(module, ptype):
                self._add_namespace(ptype, found, module.__name__, name, fn)

    @staticmethod
    def _add_namespace(
        ptype: PluginType, found: _Plugins, module: str, name: str, fn: Factory
    ) -> None:
        first = found.factories.get(name)
        if first is None:
            found.factories[name] = fn
            found.infos[name] = PluginInfo(name, ptype, "namespace", module, _target(fn))
        elif not _same(ptype, first, fn):
            msg = (
                f"duplicate {ptype.value} plugin `{name}`: already registered by"
                f" `{found.infos[name].module}`; keeping the first one"
            )
            found.record(RegistrationError(module, msg, name=name, plugin_type=ptype))

    @staticmethod
    def _scan_entry_points(ptype: PluginType, found: _Plugins) -> None:
        seen: set[str] = set()
        for ep in entrypoints.select(ptype.value):
            where = f"{ep.name} = {ep.value}"
            if ep.name in seen:
                msg = (
                    f"duplicate entry point `{ep.name}` in group `{ptype.value}`; keeping the first"
                )
                found.record(RegistrationError(where, msg, name=ep.name, plugin_type=ptype))
                continue
            seen.add(ep.name)
            previous = found.infos.get(ep.name)
            if previous is not None:
                msg = (
                    f"`{ep.name}` is registered both by namespace module `{previous.module}` and"
                    f" by entry point `{ep.value}`; the entry point wins"
                )
                found.record(RegistrationError(where, msg, name=ep.name, plugin_type=ptype))
            found.factories[ep.name] = entrypoints._deferred(ep)
            found.infos[ep.name] = PluginInfo(ep.name, ptype, "entry_point", ep.module, ep.value)

    def get(self, plugin_type: PluginType) -> dict[str, Factory]:
        """Returns ``{name: factory}`` for one plugin type (discovered once, then cached).

        Args:
            plugin_type: the plugin type.

        Returns:
            The cached dict (as TorchX; do not modify it): namespace plugins, then entry points
            (entry points win on conflicts).
        """
        return self._load(plugin_type).factories

    def info(
        self, plugin_type: PluginType | None = None
    ) -> dict[str, Factory] | dict[PluginType, dict[str, Factory]]:
        """Returns the discovered plugins (as TorchX: copies, discovering every type if needed).

        Args:
            plugin_type: one type, or None for every type.

        Returns:
            ``{name: factory}`` for one type, else ``{PluginType: {name: factory}}``.
        """
        if plugin_type is not None:
            return dict(self._load(plugin_type).factories)
        return {t: dict(self._load(t).factories) for t in PluginType}

    def sources(
        self, plugin_type: PluginType | None = None
    ) -> dict[str, PluginInfo] | dict[PluginType, dict[str, PluginInfo]]:
        """Describes where each plugin comes from (namespace module or entry point).

        Args:
            plugin_type: one type, or None for every type.

        Returns:
            ``{name: PluginInfo}`` for one type, else ``{PluginType: {name: PluginInfo}}``.
        """
        if plugin_type is not None:
            return dict(self._load(plugin_type).infos)
        return {t: dict(self._load(t).infos) for t in PluginType}

    @property
    def errors(self) -> list[RegistrationError]:
        """Errors recorded so far, for the types already discovered."""
        with self._lock:
            return [e for plugins in self._plugins.values() for e in plugins.errors]

    def load_errors(self, plugin_type: PluginType | None = None) -> list[RegistrationError]:
        """Discovers ``plugin_type`` (or every type) and returns the errors recorded for it.

        Args:
            plugin_type: one type, or None for every type.

        Returns:
            The recorded errors.
        """
        types = [PluginType(plugin_type)] if plugin_type is not None else list(PluginType)
        return [e for t in types for e in self._load(t).errors]

    def clear(self) -> None:
        """Drops every cached discovery and resets the ``registry()`` singleton."""
        with self._lock:
            self._plugins.clear()
        registry.cache_clear()

    def to_dict(self) -> dict[str, Any]:
        """Returns ``{type value: {name: {source, module, target}}, "errors": [...]}``."""
        out: dict[str, Any] = {
            t.value: {n: i.to_dict() for n, i in self._load(t).infos.items()} for t in PluginType
        }
        out["errors"] = [e.to_dict() for e in self.load_errors()]
        return out

    def __str__(self) -> str:
        import yaml  # lazy: yaml ~17 ms, only to print the registry

        return str(yaml.safe_dump(self.to_dict(), sort_keys=False))

    def __repr__(self) -> str:
        return f"PluginRegistry(source={self._source})"


@lru_cache(maxsize=1)
def registry() -> PluginRegistry:
    """Returns the process-wide plugin registry (``registry.cache_clear()`` resets it).

    Raises:
        ValueError: ``TORCHX_PLUGINS_SOURCE`` is invalid.
    """
    return PluginRegistry()
