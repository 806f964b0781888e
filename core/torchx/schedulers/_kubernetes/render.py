"""Fast, exact rendering of manifests: models -> plain data -> YAML.

The one serializer and the one YAML dumper of both kubernetes modes (the Volcano Job, plain
mode's Service and Jobs, pod overlays).

``to_plain`` gives the same result as ``ApiClient.sanitize_for_serialization`` for the model
classes (it reads the models' attribute tables directly instead of through properties).

``dump_yaml_all`` gives exactly ``yaml.dump_all(docs, sort_keys=True)`` (``dump_yaml``:
``yaml.dump``) for JSON-like data (dicts with short printable ASCII string keys, lists, ASCII
str, int, bool, None): it feeds libyaml's emitter the events PyYAML's representer would
produce, skipping the representer and serializer, and resolving each distinct string once.
Anything else (where libyaml and PyYAML's Python emitter could differ) falls back to
``yaml.dump_all``.
"""

from __future__ import annotations

import functools
from typing import Any

from torchx.schedulers._kubernetes.models import api_client

__all__ = ["dump_yaml", "dump_yaml_all", "to_plain"]

_PRIMITIVES = (str, int, float, bool, bytes)


def to_plain(obj: Any) -> Any:
    """Serialize kubernetes models (nested in dicts, lists and tuples) to JSON-ready data.

    Args:
        obj: models or plain data.

    Returns:
        Dicts with the API's camelCase keys; ``None`` attributes are left out.
    """
    if obj is None or isinstance(obj, _PRIMITIVES):
        return obj
    if isinstance(obj, list | tuple):
        return [to_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    types = getattr(type(obj), "openapi_types", None)
    if types is None:  # dates and anything unusual: the client's own rules
        return api_client().sanitize_for_serialization(obj)
    names = type(obj).attribute_map
    state = obj.__dict__
    out = {}
    for attr in types:
        value = state.get(f"_{attr}")
        if value is not None:
            out[names[attr]] = to_plain(value)
    return out


_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"


class _Unsupported(Exception):
    pass


@functools.cache
def _yaml() -> Any:
    import yaml  # lazy: yaml ~17 ms; runopts kubernetes skips it

    return yaml


@functools.cache
def _resolver() -> Any:
    return _yaml().resolver.Resolver()


@functools.lru_cache(maxsize=65536)
def _scalar(value: str, tag: str) -> Any:
    """The scalar event for ``value``; events are read-only to the emitter, so they are shared.

    Plain style is allowed only if ``value`` would read back with ``tag`` (``"0"`` is quoted).
    """
    yaml = _yaml()
    plain = _resolver().resolve(yaml.ScalarNode, value, (True, False)) == tag
    return yaml.events.ScalarEvent(None, tag, (plain, tag == _STR), value)


@functools.cache
def _collection_events() -> tuple[Any, Any, Any, Any]:
    ev = _yaml().events
    return (
        ev.MappingStartEvent(None, None, True, flow_style=False),
        ev.MappingEndEvent(),
        ev.SequenceStartEvent(None, None, True, flow_style=False),
        ev.SequenceEndEvent(),
    )


def _simple_key(key: Any) -> bool:
    """Keys both PyYAML emitters write the same way (``key:``); others take the slow path."""
    return isinstance(key, str) and 0 < len(key) < 100 and key.isascii() and key.isprintable()


def _collect(data: Any, out: list[Any], marks: tuple[Any, Any, Any, Any]) -> None:
    if isinstance(data, str):
        if not data.isascii():  # libyaml folds escaped non-ASCII text by bytes, PyYAML by chars
            raise _Unsupported
        out.append(_scalar(data, _STR))
    elif isinstance(data, dict):
        out.append(marks[0])
        for key in sorted(data):
            if not _simple_key(key):
                raise _Unsupported
            out.append(_scalar(key, _STR))
            _collect(data[key], out, marks)
        out.append(marks[1])
    elif isinstance(data, list):
        out.append(marks[2])
        for item in data:
            _collect(item, out, marks)
        out.append(marks[3])
    elif isinstance(data, bool):
        out.append(_scalar("true" if data else "false", _BOOL))
    elif isinstance(data, int):
        out.append(_scalar(str(data), _INT))
    elif data is None:
        out.append(_scalar("null", _NULL))
    else:
        raise _Unsupported


def dump_yaml(data: Any) -> str:
    """``yaml.dump(data, sort_keys=True)``, fast for JSON-like data (one document).

    Args:
        data: plain data.

    Returns:
        The YAML text.
    """
    return dump_yaml_all([data])


def dump_yaml_all(docs: list[Any]) -> str:
    """``yaml.dump_all(docs, sort_keys=True)``, fast for JSON-like data.

    Documents after the first start with ``---``, as ``yaml.dump_all`` writes them.

    Args:
        docs: the documents, plain data.

    Returns:
        The YAML text.
    """
    yaml = _yaml()
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    ev = yaml.events
    stream = [ev.StreamStartEvent()]
    marks = _collection_events()
    try:
        for data in docs:
            if not isinstance(data, dict | list):  # a bare scalar document ends with "..."
                raise _Unsupported
            stream.append(ev.DocumentStartEvent(explicit=None))
            _collect(data, stream, marks)
            stream.append(ev.DocumentEndEvent(explicit=None))
    except (_Unsupported, TypeError):  # TypeError: keys that cannot be sorted
        return str(yaml.dump_all(docs, sort_keys=True))
    stream.append(ev.StreamEndEvent())
    return str(yaml.emit(stream, Dumper=dumper))
