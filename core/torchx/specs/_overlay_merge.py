"""Merge rules for overlays: plain keys, ``__put__``, ``__del__`` and ``__join__`` operators."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["PUT", "JOIN", "DEL", "parse_key", "field_of", "apply_overlay", "accumulate"]

_PUT = "__put__"
_DEL = "__del__"
_JOIN = "__join__"


def PUT(key: str) -> str:
    """Returns the operator key that replaces ``key`` instead of merging into it."""
    return f"{_PUT}:{key}"


def JOIN(key: str, *, on: str) -> str:
    """Returns the operator key that merges list items of ``key`` matched by field ``on``."""
    return f"{_JOIN}:{key}:{on}"


def DEL(key: str) -> str:
    """Returns the operator key that removes ``key``."""
    return f"{_DEL}:{key}"


def parse_key(key: str) -> tuple[str | None, str, str | None]:
    """Splits an overlay key into ``(operator, field, on)``.

    Args:
        key: a plain key or an operator key.

    Returns:
        The operator (None for a plain key), the field and the JOIN ``on`` field.

    Raises:
        ValueError: for a malformed operator key.
    """
    op, sep, rest = key.partition(":")
    if not sep or op not in (_PUT, _DEL, _JOIN):
        return None, key, None
    if op != _JOIN:
        if not rest:
            raise ValueError(f"malformed overlay key `{key}`, expected `{op}:<key>`")
        return op, rest, None
    field, sep, on = rest.rpartition(":")
    if not sep or not field or not on:
        raise ValueError(f"malformed overlay key `{key}`, expected `{_JOIN}:<key>:<on>`")
    return op, field, on


def field_of(key: str) -> str:
    """Returns the field an overlay key (plain or operator) refers to."""
    return parse_key(key)[1]


def _mismatch(field: str, existing: Any, value: Any) -> TypeError:
    return TypeError(f"type mismatch for attr: `{field}`. {type(existing)} != {type(value)}")


def _join(base: dict[str, Any], field: str, on: str, items: Any) -> None:
    existing = base.setdefault(field, [])
    if not isinstance(existing, list) or not isinstance(items, list | tuple):
        raise TypeError(f"`{JOIN(field, on=on)}` needs list values, got {type(existing)}")
    for item in [*existing, *items]:
        if not isinstance(item, dict):
            raise TypeError(f"`{JOIN(field, on=on)}` needs dict list items, got {type(item)}")
    for item in items:
        match = next((e for e in existing if on in item and e.get(on) == item[on]), None)
        if match is None:
            existing.append(copy.deepcopy(item))
        else:
            apply_overlay(match, item)


def _merge_plain(base: dict[str, Any], field: str, value: Any) -> None:
    existing = base.get(field)
    if isinstance(value, dict):
        if existing is None:
            existing = base[field] = {}
        if not isinstance(existing, dict):
            raise _mismatch(field, existing, value)
        apply_overlay(existing, value)
    elif isinstance(value, tuple):
        if existing is not None and not isinstance(existing, list | tuple):
            raise _mismatch(field, existing, value)
        base[field] = copy.deepcopy(list(value))
    elif isinstance(value, list):
        if existing is None:
            base[field] = copy.deepcopy(value)
        elif isinstance(existing, list):
            existing.extend(copy.deepcopy(value))
        else:
            raise _mismatch(field, existing, value)
    elif isinstance(existing, dict | list):
        raise _mismatch(field, existing, value)
    else:
        base[field] = value


def apply_overlay(base: dict[str, Any], overlay: dict[str, Any]) -> None:
    """Merges ``overlay`` into ``base`` in place.

    Dicts merge recursively, lists append deep copies, primitives overwrite (even
    across int and str), a tuple replaces a list. ``PUT`` replaces, ``DEL``
    removes and ``JOIN`` merges list items matched by their ``on`` field.

    Args:
        base: the dict to modify (e.g. a serialized pod).
        overlay: the overlay to merge.

    Raises:
        TypeError: for a structural type mismatch or a bad ``JOIN`` value.
        ValueError: for a malformed operator key.
    """
    for key, value in overlay.items():
        op, field, on = parse_key(key)
        # operator keys already in ``base`` (an overlay merged into an overlay) for the same
        # field are replaced, as TorchX: PUT/DEL drop every key of the field, JOIN and a plain
        # key the operator ones
        _drop_field_keys(base, field, keep_plain=op not in (_PUT, _DEL))
        if op == _PUT:
            base[field] = copy.deepcopy(value)
        elif op == _DEL:
            pass
        elif op == _JOIN:
            _join(base, field, str(on), value)
        else:
            _merge_plain(base, field, value)


def _drop_field_keys(base: dict[str, Any], field: str, keep_plain: bool) -> None:
    for k in [k for k in base if field_of(k) == field and not (keep_plain and k == field)]:
        del base[k]


def accumulate(acc: dict[str, Any], overlay: dict[str, Any]) -> None:
    """Accumulates ``overlay`` into a stored overlay; the last operator for a field wins.

    Args:
        acc: the stored overlay (modified in place).
        overlay: the overlay to add.
    """
    for key, value in overlay.items():
        op, field, _ = parse_key(key)
        for other in [k for k in acc if k != key and field_of(k) == field]:
            del acc[other]
        existing = acc.get(key)
        if op is None and isinstance(existing, dict) and isinstance(value, dict):
            accumulate(existing, value)
        elif op in (None, _JOIN) and isinstance(existing, list) and isinstance(value, list):
            existing.extend(copy.deepcopy(value))
        else:
            acc[key] = copy.deepcopy(value)
