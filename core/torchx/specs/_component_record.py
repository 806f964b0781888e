"""The record of a discovered component, with its description parsed on first read (private).

``torchx.specs.finder`` builds these (and re-exports ``_Component``, the name TorchX uses).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torchx.specs import file_linter
from torchx.specs.file_linter import ComponentFunctionValidator

__all__ = ["_Component", "_DeferredDescription", "_make_component"]


@dataclass
class _Component:
    """A discovered component function.

    Attributes:
        name: the name users pass to ``torchx run`` (``dist.ddp``, ``file.py:fn``).
        description: the docstring description (see ``get_fn_docstring``).
        fn_name: the function's name.
        fn: the function.
        validation_errors: linter messages; empty for a valid component.
    """

    name: str
    description: str
    fn_name: str
    fn: Callable[..., Any]
    validation_errors: list[str]


class _DeferredDescription:
    """A component description parsed from the docstring on first read (see ``_Component``)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn


def _get_description(self: _Component) -> str:
    value = self.__dict__["_description"]
    if isinstance(value, _DeferredDescription):
        value = self.__dict__["_description"] = _describe(value.fn)
    return str(value)


def _set_description(self: _Component, value: str | _DeferredDescription) -> None:
    self.__dict__["_description"] = value


# Parsing docstrings needs docstring_parser (and its regexes): discovery defers it until a
# description is read, so listing components (``torchx builtins``) never pays for it.
_Component.description = property(_get_description, _set_description)  # type: ignore[assignment]


def _describe(fn: Callable[..., Any]) -> str:
    try:
        return file_linter.get_fn_docstring(fn)[0]
    except Exception:  # a docstring that does not parse must not break discovery
        return f"{fn.__name__} (docstring could not be parsed)"


def _make_component(
    name: str,
    path: str,
    fn: Callable[..., Any],
    validators: list[ComponentFunctionValidator] | None,
) -> _Component:
    fn_name = fn.__name__
    messages = file_linter.validate(path, fn_name, validators)
    return _Component(
        name=name,
        description=_DeferredDescription(fn),  # type: ignore[arg-type]
        fn_name=fn_name,
        fn=fn,
        validation_errors=[m.description for m in messages],
    )
