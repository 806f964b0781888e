"""The named-resource library behind ``torchx.specs.named_resources`` and ``resource(h=...)``.

Nothing is discovered at import. The first lookup, membership test or iteration merges, in this
order (a later source overrides an earlier one):

1. ``named_resources_generic.NAMED_RESOURCES``
2. ``named_resources_aws.NAMED_RESOURCES``
3. ``NAMED_RESOURCES`` of the module named by ``TORCHX_CUSTOM_NAMED_RESOURCES``
   (default ``torchx.specs.fb.named_resources``)
4. plugins of type ``NAMED_RESOURCE`` (``torchx_plugins.named_resources`` and the entry-point
   group ``torchx.named_resources``)
5. the ``[named_resources]`` section of ``.torchxconfig`` files (first file wins per key)
6. ``NULL`` and ``MISSING`` (both equal to ``NULL_RESOURCE``)

Lookups are case-insensitive, an exact match winning. Example::

    from torchx.specs import named_resources, resource

    resource(h="gpu.small")  # Resource(cpu=8, gpu=1, memMB=32768)
    "GPU.Small" in named_resources  # True
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchx.specs.torchxconfig import TorchXConfig

from torchx.specs.api import NULL_RESOURCE, Resource

__all__ = [
    "DEFAULT_CUSTOM_NAMED_RESOURCES",
    "ENV_TORCHX_CUSTOM_NAMED_RESOURCES",
    "GiB",
    "ResourceFactory",
    "_NamedResourcesLibrary",
    "get_named_resources",
    "named_resources",
    "resource",
]

GiB: int = 1024
ResourceFactory = Callable[[], Resource]

ENV_TORCHX_CUSTOM_NAMED_RESOURCES = "TORCHX_CUSTOM_NAMED_RESOURCES"
DEFAULT_CUSTOM_NAMED_RESOURCES = "torchx.specs.fb.named_resources"


def _is_missing(err: ModuleNotFoundError, module: str) -> bool:
    """True when ``err`` says ``module`` itself (or a parent package) does not exist."""
    missing = err.name or ""
    return bool(missing) and (module == missing or module.startswith(missing + "."))


def _as_factory(value: Any) -> Any:
    """Accepts a ``Resource`` value as well as a factory (each lookup gets a copy)."""
    if isinstance(value, Resource):
        return lambda: Resource.copy(value)
    return value


def _custom_named_resources() -> dict[str, ResourceFactory]:
    """``NAMED_RESOURCES`` of the ``TORCHX_CUSTOM_NAMED_RESOURCES`` module (step 3).

    A module that does not exist contributes nothing (with a warning when the variable is set).
    A module that exists but whose own import is missing a dependency re-raises only when the
    variable is set. A module without ``NAMED_RESOURCES`` raises ``AttributeError``.
    """
    explicit = os.environ.get(ENV_TORCHX_CUSTOM_NAMED_RESOURCES) or None
    name = explicit or DEFAULT_CUSTOM_NAMED_RESOURCES
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if explicit and _is_missing(e, name):
            warnings.warn(
                f"{ENV_TORCHX_CUSTOM_NAMED_RESOURCES}={explicit!r} names a module that does not"
                " exist, so it adds no named resources; fix the module path (it must be"
                f" importable) or unset {ENV_TORCHX_CUSTOM_NAMED_RESOURCES}",
                stacklevel=4,
            )
            return {}
        if explicit:
            raise
        return {}
    if not hasattr(module, "NAMED_RESOURCES"):
        raise AttributeError(
            f"module `{name}` (from {ENV_TORCHX_CUSTOM_NAMED_RESOURCES}) has no attribute"
            " `NAMED_RESOURCES`; define `NAMED_RESOURCES = {name: factory}` in it"
        )
    return {str(k): _as_factory(v) for k, v in dict(module.NAMED_RESOURCES).items()}


def _plugin_named_resources() -> dict[str, ResourceFactory]:
    """Named resources registered as plugins (step 4)."""
    from torchx import plugins  # lazy: the registry scans plugin packages and entry points

    return plugins.registry().get(plugins.PluginType.NAMED_RESOURCE)


_CONFIG_SECTION = "named_resources"
_FORMS = (
    'JSON such as {"cpu": 4, "gpu": 0, "memMB": 8192, "devices": {"vpc.amazonaws.com/efa": 1},'
    ' "capabilities": {...}} or key=value pairs such as cpu=4,gpu=0,memMB=8192'
)
_INT_FIELDS = ("cpu", "gpu", "memMB")
_DICT_FIELDS = ("devices", "capabilities")


def _bad_entry(path: str, key: str, why: str) -> ValueError:
    return ValueError(
        f"invalid named resource `{key}` in the [{_CONFIG_SECTION}] section of {path}: {why};"
        f" write it as {_FORMS}"
    )


def _split_pairs(text: str) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for pair in text.split(","):
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"`{pair.strip()}` is not key=value")
        fields[name.strip()] = value.strip()
    return fields


def _int_field(name: str, value: Any) -> int:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"`{name}` must be a non-negative integer, got {value!r}")
    return value


def _canonical(name: str) -> str:
    known = {f.lower(): f for f in (*_INT_FIELDS, *_DICT_FIELDS)}
    if name.lower() in known:
        return known[name.lower()]
    import difflib  # lazy: difflib ~14 ms here, error messages only

    close = difflib.get_close_matches(name.lower(), list(known), n=1)
    hint = f" (did you mean `{known[close[0]]}`?)" if close else ""
    raise ValueError(f"unknown field `{name}`{hint}")


def _parse_entry(text: str) -> Resource:
    """Parses one ``[named_resources]`` value (JSON object or ``k=v,...``)."""
    text = text.strip()
    raw: Any = json.loads(text) if text.startswith("{") else _split_pairs(text)
    if not isinstance(raw, dict):
        raise ValueError("expected a JSON object")
    fields = {_canonical(str(k)): v for k, v in raw.items()}
    for required in ("cpu", "memMB"):
        if required not in fields:
            raise ValueError(f"`{required}` is required")
    ints = {f: _int_field(f, fields.get(f, 0)) for f in _INT_FIELDS}
    for f in _DICT_FIELDS:
        if not isinstance(fields.get(f, {}), dict):
            raise ValueError(f"`{f}` must be a JSON object")
    devices = {str(k): _int_field(f"devices.{k}", v) for k, v in fields.get("devices", {}).items()}
    return Resource(
        cpu=ints["cpu"],
        gpu=ints["gpu"],
        memMB=ints["memMB"],
        devices=devices,
        capabilities=dict(fields.get("capabilities", {})),
    )


def _config_factory(proto: Resource) -> ResourceFactory:
    return lambda: copy.deepcopy(proto)


def _config_named_resources(config: TorchXConfig | None = None) -> dict[str, ResourceFactory]:
    """Named resources from ``[named_resources]`` in ``.torchxconfig`` files (step 5).

    Files come from ``torchx.specs.torchxconfig.find_configs()``; the first file wins per key.
    Values are read raw (no ``%`` interpolation, the one exception to TorchX's rules).

    Raises:
        ValueError: an entry is malformed (names the file, the key and the accepted forms).
    """
    from torchx.specs.torchxconfig import TorchXConfig  # lazy: ~40 ms, only on first lookup

    found: dict[str, ResourceFactory] = {}
    source = config if config is not None else TorchXConfig.discover()
    for path, key, text in source.named_resources():
        try:
            proto = _parse_entry(text)
        except ValueError as e:
            raise _bad_entry(str(path), key, str(e)) from None
        found[key] = _config_factory(proto)
    return found


def _null() -> Resource:
    return Resource.copy(NULL_RESOURCE)


def _discover(config: TorchXConfig | None = None) -> dict[str, ResourceFactory]:
    """Merges every source in order; a later source overrides an earlier one."""
    from torchx.specs import (  # lazy: 0.4 ms; 'torchx run' needs no lookup
        named_resources_aws,
        named_resources_generic,
    )

    factories: dict[str, ResourceFactory] = {}
    factories.update(named_resources_generic.NAMED_RESOURCES)
    factories.update(named_resources_aws.NAMED_RESOURCES)
    factories.update(_custom_named_resources())
    factories.update(_plugin_named_resources())
    factories.update(_config_named_resources(config))
    factories.update({"NULL": _null, "MISSING": _null})
    return factories


class _NamedResourcesLibrary(Mapping[str, Resource]):
    """Lazily discovered ``{name: Resource}`` mapping; each lookup calls a fresh factory.

    ``_factories`` is ``None`` until the first lookup, membership test or iteration, which loads
    every source once (single-flight under an ``RLock``); ``reset()`` drops the cache.
    Lookups are case-insensitive with an exact match winning; two names that differ only by
    case and match the key case-insensitively (with no exact match) are ambiguous.
    """

    def __init__(self) -> None:
        self._factories: dict[str, ResourceFactory] | None = None
        self._lock = threading.RLock()
        self._loading = False
        self._config: TorchXConfig | None = None

    def _load(self) -> dict[str, ResourceFactory]:
        factories = self._factories
        if factories is not None:
            return factories
        with self._lock:
            if self._factories is not None:
                return self._factories
            if self._loading:
                raise RuntimeError(
                    "re-entrant named-resource lookup: discovery is already in progress on this"
                    " thread. A named-resource source (plugin or TORCHX_CUSTOM_NAMED_RESOURCES"
                    " module) looked up a named resource while being imported; look it up inside"
                    " the factory function instead."
                )
            self._loading = True
            try:
                config = self._config
                self._factories = _discover(config) if config is not None else _discover()
            finally:
                self._loading = False
            return self._factories

    @contextmanager
    def using(self, config: TorchXConfig) -> Iterator[None]:
        """Within the block, step 5 reads ``[named_resources]`` of ``config``, not the files.

        For a process that launches on behalf of a configuration it was handed (an
        orchestrator task whose settings carry ``.torchxconfig`` text): pass a config that
        chains that text before the discovered files (``TorchXConfig.then``). The library is
        rediscovered on entry and on exit. Not for concurrent use from several threads.

        Args:
            config: the configuration whose ``[named_resources]`` (first source wins) apply.
        """
        with self._lock:
            previous, self._config, self._factories = self._config, config, None
        try:
            yield
        finally:
            with self._lock:
                self._config, self._factories = previous, None

    def reset(self) -> None:
        """Drops the discovered resources; the next lookup discovers them again."""
        with self._lock:
            self._factories = None

    def _resolve(self, key: object) -> str:
        """Returns the registered spelling of ``key`` or raises the lookup ``KeyError``."""
        factories = self._load()
        if key in factories:
            return str(key)
        if not isinstance(key, str):
            raise KeyError(f"No named resource found for `{key}`: names are strings")
        matches = [name for name in factories if name.lower() == key.lower()]
        if len(matches) == 1:
            return matches[0]
        if matches:
            spelled = ", ".join(f"`{m}`" for m in matches)
            raise KeyError(
                f"Named resource `{key}` is ambiguous: it matches {spelled}, which differ only"
                " by case; use the exact name."
            )
        raise KeyError(self._unknown(key, factories))

    @staticmethod
    def _unknown(key: str, factories: Mapping[str, ResourceFactory]) -> str:
        lowered: dict[str, str] = {}
        for name in factories:
            lowered.setdefault(name.lower(), name)
        import difflib  # lazy: difflib ~14 ms here, error messages only

        close = difflib.get_close_matches(key.lower(), list(lowered), n=1)
        if close:
            return f"No named resource found for `{key}`. Did you mean `{lowered[close[0]]}`?"
        return f"No named resource found for `{key}`. Registered named resources: {list(factories)}"

    def __getitem__(self, key: str) -> Resource:
        factories = self._load()
        return factories[self._resolve(key)]()

    def __contains__(self, key: object) -> bool:
        try:
            self._resolve(key)
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._load()))

    def __len__(self) -> int:
        return len(self._load())

    def __repr__(self) -> str:
        factories = self._factories
        state = "not loaded" if factories is None else f"{len(factories)} names"
        return f"_NamedResourcesLibrary({state})"


named_resources = _NamedResourcesLibrary()
"""The process-wide named-resource library (call ``named_resources.reset()`` to rediscover)."""


def resource(
    cpu: int | None = None,
    gpu: int | None = None,
    memMB: int | None = None,
    h: str | None = None,
) -> Resource:
    """Returns a named resource (``h``) or a ``Resource`` from explicit values.

    Falsy values fall back to the defaults, so ``cpu=0`` gives 2 and ``memMB=0`` gives 1024.

    Args:
        cpu: number of cpus (default 2).
        gpu: number of gpus (default 0).
        memMB: memory in MB (default 1024).
        h: a named resource; when truthy the other arguments are ignored.

    Returns:
        The resource.

    Raises:
        KeyError: ``h`` is not a registered named resource.
    """
    if h:
        return named_resources[h]
    return Resource(cpu=cpu or 2, gpu=gpu or 0, memMB=memMB or 1024)


def get_named_resources(res: str) -> Resource:
    """Deprecated: use ``resource(h=name)``; returns ``named_resources[res]`` with a warning.

    Args:
        res: the named resource.

    Returns:
        The resource.
    """
    warnings.warn(
        "`get_named_resources()` is deprecated, use `resource(h=name)` instead",
        FutureWarning,
        stacklevel=2,
    )
    return named_resources[res]
