"""``{{ ... }}`` references in pipeline strings (private).

A pipeline string may reference, between double braces:

- ``params.NAME``: a pipeline parameter;
- ``steps.STEP.FIELD``: what an upstream step produced, FIELD one of ``app_handle``,
  ``app_id``, ``tracker_run_id``, ``state`` or ``outputs.NAME`` (a declared output path);
- ``pipeline.dir`` / ``pipeline.name``: the directory of the pipeline file, the pipeline name.

TorchX macros (``${app_id}``, ``${replica_id}``) are left alone: they are substituted by the
scheduler, per replica.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["STEP_FIELDS", "Ref", "TemplateError", "find_refs", "render"]

STEP_FIELDS = ("app_handle", "app_id", "tracker_run_id", "state")
_EXPR = re.compile(r"\{\{(.*?)\}\}")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PARAM = re.compile(rf"params\.({_NAME})")
_STEP = re.compile(rf"steps\.({_NAME})\.({'|'.join(STEP_FIELDS)}|outputs\.{_NAME})")
_PIPELINE = re.compile(r"pipeline\.(dir|name)")


class TemplateError(ValueError):
    """A ``{{ ... }}`` expression that is not one of the supported references."""


@dataclass(frozen=True)
class Ref:
    """One ``{{ ... }}`` reference.

    Attributes:
        kind: ``params``, ``steps`` or ``pipeline``.
        name: the parameter, the step, or the pipeline attribute.
        field: for ``steps``: ``app_id``, ``outputs.checkpoint``, ...; else "".
        text: the whole ``{{ ... }}`` expression as written.
    """

    kind: str
    name: str
    field: str = ""
    text: str = ""

    @property
    def expr(self) -> str:
        """The reference without braces, e.g. ``steps.train.app_id``."""
        parts = [self.kind, self.name] + ([self.field] if self.field else [])
        return ".".join(parts)


def _parse(inner: str, text: str) -> Ref:
    expr = inner.strip()
    m = _PARAM.fullmatch(expr)
    if m:
        return Ref("params", m.group(1), "", text)
    m = _STEP.fullmatch(expr)
    if m:
        return Ref("steps", m.group(1), m.group(2), text)
    m = _PIPELINE.fullmatch(expr)
    if m:
        return Ref("pipeline", m.group(1), "", text)
    raise TemplateError(
        f"unsupported expression `{text}`: use `{{{{ params.NAME }}}}`,"
        f" `{{{{ steps.STEP.FIELD }}}}` (FIELD: {', '.join(STEP_FIELDS)}, outputs.NAME)"
        " or `{{ pipeline.dir }}`"
    )


def find_refs(value: str) -> list[Ref]:
    """Returns the references in ``value``, in order.

    Args:
        value: a pipeline string.

    Raises:
        TemplateError: an expression is not a supported reference.
    """
    return [_parse(m.group(1), m.group(0)) for m in _EXPR.finditer(value)]


def render(value: str, resolve: Callable[[Ref], str]) -> str:
    """Replaces every reference in ``value`` by ``resolve(ref)``.

    Args:
        value: a pipeline string.
        resolve: gives the text of a reference.

    Raises:
        TemplateError: an expression is not a supported reference.
    """
    return _EXPR.sub(lambda m: resolve(_parse(m.group(1), m.group(0))), value)
