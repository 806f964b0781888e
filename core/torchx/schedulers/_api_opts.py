"""``StructuredOpts``: typed scheduler run options declared as a dataclass (§5).

A subclass is a dataclass whose fields are the run options; the string literal under a field is
its help text::

    @dataclass
    class Opts(StructuredOpts):
        log_dir: str | None = None
        \"\"\"dir to write stdout/stderr log files of replicas\"\"\"
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import linecache
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, Union

from torchx.specs.options import CfgVal, InvalidRunConfigException, cases, runopts

__all__ = ["StructuredOpts"]

_S = TypeVar("_S", bound="StructuredOpts")


@dataclass
class StructuredOpts(Mapping[str, CfgVal]):
    """Base class for typed run options; an instance is also a read-only ``Mapping``.

    Keys are the cfg keys (``metadata["cfg_key"]`` or the field name); a nested
    ``StructuredOpts`` field contributes keys ``field.sub``. Lookups also accept camelCase.
    """

    @classmethod
    def as_runopts(cls) -> runopts:
        """Build the ``runopts`` that declare these fields.

        Returns:
            A runopts with one option per (flattened) field; fields without a default are required.
        """
        opts = runopts()
        for key, opt_type, f, helps in _leaf_fields(cls, ""):
            default = _field_default(f)
            required = default is dataclasses.MISSING
            opts.add(
                key,
                opt_type,
                helps.get(f.name, ""),
                default=None if required else default,
                required=required,
            )
        return opts

    @classmethod
    def from_cfg(cls: type[_S], cfg: Mapping[str, CfgVal]) -> _S:
        """Build an instance from a cfg mapping.

        Each field is read from ``metadata["cfg_key"]``, then its snake name, then its camelCase
        alias; a missing field takes its default.

        Args:
            cfg: the (resolved) run config.

        Returns:
            The typed options.

        Raises:
            InvalidRunConfigException: a required option is missing.
        """
        values: dict[str, Any] = {}
        hints = _type_hints(cls)
        for f in dataclasses.fields(cls):
            nested = _nested_type(hints[f.name])
            if nested is not None:
                prefix = f"{_cfg_key(f)}."
                sub = {k[len(prefix) :]: v for k, v in cfg.items() if k.startswith(prefix)}
                values[f.name] = nested.from_cfg(sub)
                continue
            for key in _aliases(f):
                if key in cfg:
                    values[f.name] = cfg[key]
                    break
            else:
                if _field_default(f) is dataclasses.MISSING:
                    key = _cfg_key(f)
                    raise InvalidRunConfigException(
                        f"Required run option: {key}, must be provided and not `None`",
                        key,
                        dict(cfg),
                    )
        return cls(**values)

    @classmethod
    def get_docstrings(cls) -> dict[str, str]:
        """Returns the help text of each field, by field name.

        A nested ``StructuredOpts`` field contributes its fields' texts as ``field.sub``.
        """
        helps = dict(_field_docstrings(cls))
        hints = _type_hints(cls)
        for f in dataclasses.fields(cls):
            nested = _nested_type(hints[f.name])
            if nested is not None:
                helps.update({f"{f.name}.{k}": v for k, v in nested.get_docstrings().items()})
        return helps

    def _flat(self) -> dict[str, CfgVal]:
        out: dict[str, CfgVal] = {}
        hints = _type_hints(type(self))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, StructuredOpts):
                out.update({f"{_cfg_key(f)}.{k}": v for k, v in value.items()})
            elif value is not None or _nested_type(hints[f.name]) is None:
                out[_cfg_key(f)] = value  # an unset (None) nested group has no keys
        return out

    def __getitem__(self, key: str) -> CfgVal:
        flat = self._flat()
        if key in flat:
            return flat[key]
        prefix, dot, rest = key.partition(".")
        for f in dataclasses.fields(self):
            if prefix not in _aliases(f):
                continue
            value = getattr(self, f.name)
            if dot and isinstance(value, StructuredOpts):
                return value[rest]
            if not dot and _cfg_key(f) in flat:
                return flat[_cfg_key(f)]
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._flat())

    def __len__(self) -> int:
        return len(self._flat())

    def __contains__(self, key: object) -> bool:
        try:
            self[str(key)]
        except KeyError:
            return False
        return True

    def __or__(self, other: Mapping[str, CfgVal]) -> dict[str, CfgVal]:
        return {**self._flat(), **dict(other)}


def _cfg_key(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("cfg_key", f.name))


def _aliases(f: dataclasses.Field[Any]) -> list[str]:
    keys = [_cfg_key(f), f.name, cases.snake_to_camel(f.name)]
    return list(dict.fromkeys(keys))


def _field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _unwrap_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _nested_type(tp: Any) -> type[StructuredOpts] | None:
    tp = _unwrap_optional(tp)
    if isinstance(tp, type) and issubclass(tp, StructuredOpts):
        return tp
    return None


@functools.cache
def _type_hints(cls: type[StructuredOpts]) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, evaluated once per class (runopts serve every dryrun).

    A class whose string annotations name classes local to a function cannot be evaluated:
    its raw annotations are returned (such a nested field is then recognised by its value).
    """
    try:
        return typing.get_type_hints(cls)
    except NameError:
        raw: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            raw.update(getattr(klass, "__annotations__", {}))
        return raw


def _leaf_fields(
    cls: type[StructuredOpts], prefix: str
) -> Iterator[tuple[str, Any, dataclasses.Field[Any], dict[str, str]]]:
    """Yield ``(cfg key, option type, field, help by field name)`` for every leaf field."""
    hints = _type_hints(cls)
    helps = _field_docstrings(cls)
    for f in dataclasses.fields(cls):
        nested = _nested_type(hints[f.name])
        if nested is not None:
            yield from _leaf_fields(nested, f"{prefix}{_cfg_key(f)}.")
        else:
            yield f"{prefix}{_cfg_key(f)}", _unwrap_optional(hints[f.name]), f, helps


def _field_docstrings(cls: type) -> dict[str, str]:
    """Help texts: ``metadata["help"]``, else the string literal right under each field."""
    helps: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass in (object, StructuredOpts) or not dataclasses.is_dataclass(klass):
            continue
        helps.update(_class_docstrings(klass))  # copies: the cached dict is never mutated
    for f in dataclasses.fields(cls):
        if "help" in f.metadata:
            helps[f.name] = str(f.metadata["help"])
    return helps


@functools.cache
def _class_docstrings(klass: type) -> dict[str, str]:
    # cached: runopts are built on every dryrun
    body = _class_node(klass)
    if body is None:
        return {}
    found: dict[str, str] = {}
    stmts = body.body
    for stmt, nxt in zip(stmts, stmts[1:], strict=False):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            found[stmt.target.id] = inspect.cleandoc(nxt.value.value)
    return found


def _class_node(klass: type) -> ast.ClassDef | None:
    """The class statement of ``klass``, found in its module's syntax tree by qualified name.

    Cheaper than ``inspect.getsource`` (which parses the module too, then tokenizes the class
    to cut its lines out); the first match wins, as there. Classes defined in a function fall
    back to ``inspect.getsource``.
    """
    if "<locals>" in klass.__qualname__:
        try:
            import textwrap  # lazy: ~11 ms here, classes defined in a function only

            first = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0]
        except (OSError, TypeError, SyntaxError, IndexError):
            return None
        return first if isinstance(first, ast.ClassDef) else None
    try:
        path = inspect.getsourcefile(klass)
        node: ast.AST | None = _module_tree(path) if path else None
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    for name in klass.__qualname__.split("."):
        body = getattr(node, "body", [])
        node = next(
            (n for n in _statements(body) if isinstance(n, ast.ClassDef) and n.name == name),
            None,
        )
    return node if isinstance(node, ast.ClassDef) else None


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of ``body``, those inside ``if``/``try``/``with``/loops included."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield stmt
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(stmt, field, []))
        for handler in getattr(stmt, "handlers", []):
            yield from _statements(handler.body)
        yield stmt


def _module_tree(path: str) -> ast.Module:
    lines = linecache.getlines(path)
    if not lines:
        raise OSError(f"no source for {path}")
    return ast.parse("".join(lines), path)
