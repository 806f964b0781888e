"""Type helpers: decoding CLI strings into annotated Python types.

``to_dict`` parses the ``key=value`` wire format used by ``-cfg`` and by
component dict arguments; ``decode``/``decode_optional`` turn strings into the
types that component parameters are annotated with.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, TypeVar, Union, get_args, get_origin

__all__ = [
    "to_dict",
    "to_list",
    "decode",
    "decode_from_string",
    "decode_optional",
    "none_throws",
    "is_primitive",
    "is_bool",
    "get_argparse_param_type",
]

T = TypeVar("T")

_PRIMITIVES: tuple[type, ...] = (int, str, bool, float)
_LIST_ITEM_TYPES: tuple[type, ...] = (int, str, float)
_QUOTES = ("'", '"')
_DELIMS = (",", ";")


def _split_outside_quotes(arg: str, sep: str) -> list[str]:
    """Splits ``arg`` on ``sep`` where ``sep`` is not inside a quoted value."""
    pieces: list[str] = []
    current: list[str] = []
    quote: str | None = None
    for ch in arg:
        if quote is not None:
            if ch == quote:
                quote = None
        elif ch in _QUOTES:
            quote = ch
        elif ch == sep:
            pieces.append("".join(current))
            current = []
            continue
        current.append(ch)
    pieces.append("".join(current))
    return pieces


def _last_delim_outside_quotes(piece: str) -> int:
    """Returns the index of the last ``,``/``;`` outside quotes, or -1."""
    idx = -1
    quote: str | None = None
    for i, ch in enumerate(piece):
        if quote is not None:
            if ch == quote:
                quote = None
        elif ch in _QUOTES:
            quote = ch
        elif ch in _DELIMS:
            idx = i
    return idx


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] in _QUOTES and value[-1] == value[0]:
        return value[1:-1]
    return value


def to_dict(arg: str) -> dict[str, str]:
    """Parses ``"k1=v1,k2=v2"`` (``,`` or ``;`` delimited) into a dict.

    A value may itself contain delimiters: each middle piece of the string split
    on ``=`` is ``value<delim>nextkey`` and is split at its **last** delimiter, so
    ``"FOO=v1,v2,BAR=v3"`` gives ``{"FOO": "v1,v2", "BAR": "v3"}``. Values quoted
    with ``'`` or ``"`` may contain ``=``, ``,`` and ``;``; the quotes are removed.

    Args:
        arg: the string to parse; ``""`` gives ``{}``.

    Returns:
        The parsed mapping, in the order the keys appear.

    Raises:
        ValueError: if there is no ``key=value`` pair or a piece cannot be split.
    """
    if not arg.strip():
        return {}
    pieces = _split_outside_quotes(arg, "=")
    if len(pieces) < 2:
        raise ValueError(f"`{arg}` does not have at least one `key=value` pair")
    result: dict[str, str] = {}
    key = pieces[0].strip()
    for piece in pieces[1:-1]:
        idx = _last_delim_outside_quotes(piece)
        if idx == -1:
            raise ValueError(
                f"`{piece}` cannot be split into `val<delim>key` with delims={list(_DELIMS)}"
            )
        result[key] = _unquote(piece[:idx])
        key = piece[idx + 1 :].strip()
    result[key] = _unquote(pieces[-1])
    return result


def to_list(arg: str) -> list[str]:
    """Splits ``"a,b,c"`` on commas, stripping blanks around items; ``""`` gives ``[]``."""
    if not arg.strip():
        return []
    return [item.strip() for item in arg.split(",")]


def is_primitive(param_type: Any) -> bool:
    """Returns True if ``param_type`` is one of ``int``, ``str``, ``bool``, ``float``."""
    return param_type in _PRIMITIVES


def is_bool(param_type: Any) -> bool:
    """Returns True if ``param_type`` is ``bool``."""
    return param_type is bool


def get_argparse_param_type(parameter: inspect.Parameter) -> type:
    """Returns the argparse ``type`` for a component parameter.

    Args:
        parameter: the function parameter.

    Returns:
        The annotation for ``int``, ``str`` and ``float``; ``str`` otherwise.
    """
    annotation = decode_optional(parameter.annotation)
    if annotation in _LIST_ITEM_TYPES:
        return annotation
    return str


def decode_optional(param_type: Any) -> Any:
    """Unwraps ``Optional[T]``, ``T | None`` and ``None | T`` into ``T``.

    Args:
        param_type: an annotation.

    Returns:
        ``T`` for a two-member union with ``None`` (either order), else ``param_type``.
    """
    origin = get_origin(param_type)
    if origin is not Union and origin is not types.UnionType:
        return param_type
    args = get_args(param_type)
    others = [a for a in args if a is not type(None)]
    if len(args) == 2 and len(others) == 1:
        return others[0]
    return param_type


def _cast(tp: Any, value: str) -> Any:
    return value if tp is Any else tp(value)


def decode_from_string(encoded_value: str, annotation: Any) -> Any:
    """Decodes a string into a ``dict[K, V]`` or ``list[T]`` annotation.

    Dicts use :func:`to_dict` (``A=1,B=2``) and cast keys and values with ``K``
    and ``V``; lists are split on ``,``, stripped and cast with ``T``.

    Args:
        encoded_value: the string value; empty gives None.
        annotation: a dict or list annotation (``Optional`` already unwrapped).

    Returns:
        The decoded value, or None for an empty string.

    Raises:
        ValueError: for a list of non-primitives or an unsupported annotation.
    """
    if not encoded_value:
        return None
    origin = get_origin(annotation) or annotation
    args = get_args(annotation)
    if origin is dict:
        key_type, val_type = args if len(args) == 2 else (str, str)
        return {_cast(key_type, k): _cast(val_type, v) for k, v in to_dict(encoded_value).items()}
    if origin is list:
        item_type = args[0] if args else str
        if item_type not in _LIST_ITEM_TYPES:
            raise ValueError("List types support only primitives: int, str, float")
        return [item_type(item.strip()) for item in encoded_value.split(",")]
    raise ValueError(f"unsupported argument annotation `{annotation}`, expected dict or list")


def decode(encoded_value: Any, annotation: Any) -> Any:
    """Decodes a (usually string) value into the type named by ``annotation``.

    Args:
        encoded_value: the value, typically a CLI string.
        annotation: the parameter annotation (``Optional`` already unwrapped).

    Returns:
        None for None; for ``bool`` ``value.lower() == "true"``; dicts and lists via
        :func:`decode_from_string`; any other value unchanged.
    """
    if encoded_value is None:
        return None
    if is_bool(annotation):
        if isinstance(encoded_value, bool):
            return encoded_value
        return bool(encoded_value) and str(encoded_value).lower() == "true"
    if not is_primitive(annotation) and isinstance(encoded_value, str):
        return decode_from_string(encoded_value, annotation)
    return encoded_value


def none_throws(optional: T | None, message: str = "Unexpected `None`") -> T:
    """Returns ``optional`` unless it is None.

    Args:
        optional: a value that may be None.
        message: the assertion message.

    Returns:
        The value.

    Raises:
        AssertionError: if ``optional`` is None.
    """
    if optional is None:
        raise AssertionError(message)
    return optional
