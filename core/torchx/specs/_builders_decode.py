"""Helpers for :mod:`torchx.specs.builders`: annotations, the parser class and value decoding."""

from __future__ import annotations

import argparse
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, NoReturn, get_args, get_origin

from torchx.specs.api import TorchXError
from torchx.specs.file_linter import get_fn_docstring
from torchx.util.types import decode_from_string, decode_optional

__all__ = [
    "UNSET",
    "ComponentArgsError",
    "ComponentArgumentParser",
    "annotated_option_strings",
    "argparse_type",
    "decode_value",
    "resolve_parameters",
    "strip_annotated",
]

_PRIMITIVES = (int, str, float)
_CONTAINERS = (dict, list)


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()


class ComponentArgsError(TorchXError, ValueError):
    """The arguments given to a component do not parse or do not decode."""


class ComponentArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that raises :class:`ComponentArgsError` instead of exiting.

    Its help texts can come from a component's docstring on first use (:meth:`defer_help`):
    parsing the docstring is needed only to print ``--help``, not to parse arguments.
    """

    _help_from: Callable[..., Any] | None = None

    def defer_help(self, fn: Callable[..., Any]) -> None:
        """Reads the description and parameter help from ``fn``'s docstring on first use.

        Parameters added with help ``" "`` get theirs when the help is first formatted.

        Args:
            fn: the component function.
        """
        self._help_from = fn

    def format_help(self) -> str:
        """Formats the help, reading the component's docstring first if it was deferred."""
        fn, self._help_from = self._help_from, None
        if fn is not None:
            self.description, args_desc = get_fn_docstring(fn)
            for action in self._actions:
                if action.help == " " and action.dest in args_desc:
                    action.help = args_desc[action.dest]
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        """Raises :class:`ComponentArgsError` with ``message`` and a close-match hint.

        Args:
            message: the argparse error message.
        """
        fn_name = self.prog.split()[-1] if self.prog.split() else "component"
        hint = self._suggestion(message)
        raise ComponentArgsError(
            f"invalid arguments for component `{fn_name}`: {message}{hint}."
            f" Run `{self.prog.strip()} --help` for the list of arguments"
        )

    def _suggestion(self, message: str) -> str:
        if not message.startswith("unrecognized arguments:"):
            return ""
        options = [s for a in self._actions for s in a.option_strings]
        for token in message.split(":", 1)[1].split():
            if token.startswith("-"):
                import difflib  # lazy: difflib ~14 ms here, error messages only

                close = difflib.get_close_matches(token.split("=", 1)[0], options, n=1)
                if close:
                    return f" (did you mean `{close[0]}`?)"
        return ""


def strip_annotated(annotation: Any) -> Any:
    """Returns ``T`` for ``Annotated[T, ...]``, else ``annotation``."""
    if get_origin(annotation) is Annotated:
        return get_args(annotation)[0]
    return annotation


def annotated_option_strings(annotation: Any) -> list[str]:
    """Returns the extra option strings (``"-x"``) declared with ``Annotated[T, "-x"]``."""
    if get_origin(annotation) is not Annotated:
        return []
    extras = annotation.__metadata__
    return [e for e in extras if isinstance(e, str) and e.startswith("-")]


def argparse_type(annotation: Any) -> type:
    """Returns the argparse ``type``: the annotation for int, str or float, else ``str``."""
    tp = decode_optional(strip_annotated(annotation))
    return tp if tp in _PRIMITIVES else str


def resolve_parameters(fn: Callable[..., Any]) -> list[tuple[inspect.Parameter, Any]]:
    """Returns ``fn``'s parameters with their annotations evaluated (string annotations too).

    Args:
        fn: the component function.

    Returns:
        ``(parameter, annotation)`` pairs in signature order; ``Annotated`` is kept.
    """
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # unresolvable forward references: fall back to the raw annotations
        hints = {}
    params = inspect.signature(fn).parameters.values()
    return [(p, hints.get(p.name, p.annotation)) for p in params]


def _is_container(tp: Any) -> bool:
    return tp in _CONTAINERS or get_origin(tp) in _CONTAINERS


def _cast_items(name: str, value: Any, tp: Any) -> Any:
    args = get_args(tp)
    if (get_origin(tp) or tp) is dict:
        key_t, val_t = args if len(args) == 2 else (str, str)
        return {_cast(name, key_t, k): _cast(name, val_t, v) for k, v in dict(value).items()}
    item_t = args[0] if args else str
    if item_t not in _PRIMITIVES:
        raise ValueError("List types support only primitives: int, str, float")
    return [_cast(name, item_t, v) for v in value]


def _cast(name: str, tp: Any, value: Any) -> Any:
    if tp is Any or not callable(tp):
        return value
    try:
        return tp(value)
    except (TypeError, ValueError) as e:
        type_name = getattr(tp, "__name__", str(tp))
        raise ComponentArgsError(f"invalid {type_name} value {value!r} for `--{name}`") from e


def _decode_container(name: str, value: Any, tp: Any) -> Any:
    if isinstance(value, str):
        args = get_args(tp)
        is_list = (get_origin(tp) or tp) is list
        if is_list and args and args[0] not in _PRIMITIVES:
            raise ValueError("List types support only primitives: int, str, float")
        try:
            return decode_from_string(value, tp)
        except ValueError as e:
            raise ComponentArgsError(f"invalid value {value!r} for `--{name}`: {e}") from e
    return _cast_items(name, value, tp)


def decode_value(name: str, value: Any, annotation: Any) -> Any:
    """Decodes a parsed (usually string) value for parameter ``name`` of type ``annotation``.

    ``None`` stays None; ``bool`` is ``value.lower() == "true"``; ``dict[K, V]`` uses
    ``to_dict`` (``A=1,B=2``); ``list[T]`` splits on ``,``; an empty string for a dict or list
    is None; a plain class arrives unchanged (a string); other generics are rejected.

    Args:
        name: the parameter name (for error messages).
        value: the parsed value.
        annotation: the parameter annotation.

    Returns:
        The decoded value.

    Raises:
        ValueError: an annotation the CLI cannot decode.
        ComponentArgsError: a value that does not decode.
    """
    tp = decode_optional(strip_annotated(annotation))
    if value is None:
        return None
    if tp is bool:
        if isinstance(value, bool):
            return value
        return bool(value) and str(value).lower() == "true"
    if tp in _PRIMITIVES:
        return _cast(name, tp, value)
    if tp is inspect.Parameter.empty or tp is Any:
        return value
    if _is_container(tp):
        return _decode_container(name, value, tp)
    if get_origin(tp) is None and isinstance(tp, type):
        return value
    raise ValueError(f"unsupported argument annotation `{tp}`, expected dict or list")
