"""Resolution of the deprecated ``Role.overrides`` values.

A value in ``overrides`` replaces the attribute of the same name. Callables are
called and awaitables are awaited once; the result is written back into the dict
(as a ``_ResolvedOverride``; copies of the role share the dict). Resolution is
single-flight under a re-entrant lock kept in the dict itself under ``_OVERRIDES_LOCK_KEY``.
``asyncio`` is imported only when an awaitable is resolved: every ``import torchx.specs``
(the CLI, each supervisor-side tool) would pay for it otherwise.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

_CO_ITERABLE_COROUTINE = 0x100  # inspect.CO_ITERABLE_COROUTINE, without importing inspect

__all__ = [
    "_OVERRIDES_LOCK_KEY",
    "_OverridesLock",
    "_ResolvedOverride",
    "has_overrides",
    "resolve_override",
]

_OVERRIDES_LOCK_KEY = "<overrides resolution lock>"
"""Reserved key under which an overrides dict keeps its resolution lock (not an identifier,
so it never names an attribute; copies sharing the dict share the lock)."""

_MINT_GUARD = threading.Lock()


class _OverridesLock:
    """The ``_OVERRIDES_LOCK_KEY`` entry: holds the dict's re-entrant resolution lock."""

    __slots__ = ("lock",)

    def __init__(self) -> None:
        self.lock: Any = threading.RLock()

    def __deepcopy__(self, memo: dict[int, Any]) -> _OverridesLock:
        return self


class _ResolvedOverride:
    """An override value already resolved (written back in place of the producer).

    Calling it returns the value, so code that calls the raw dict entry keeps working.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> Any:
        return self.value


def has_overrides(overrides: dict[str, Any]) -> bool:
    """Whether ``overrides`` holds any entry besides its resolution lock."""
    return any(key != _OVERRIDES_LOCK_KEY for key in overrides)


def _lock_for(overrides: dict[str, Any]) -> Any:
    holder = overrides.get(_OVERRIDES_LOCK_KEY)
    if holder is None:
        with _MINT_GUARD:
            holder = overrides.get(_OVERRIDES_LOCK_KEY)
            if holder is None:
                holder = _OverridesLock()
                overrides[_OVERRIDES_LOCK_KEY] = holder
    return holder.lock


async def _await(value: Awaitable[Any]) -> Any:
    return await value


def _is_awaitable(value: Any) -> bool:
    """``inspect.isawaitable`` without importing :mod:`inspect`."""
    if isinstance(value, Awaitable):
        return True
    return isinstance(value, types.GeneratorType) and bool(
        value.gi_code.co_flags & _CO_ITERABLE_COROUTINE
    )


def _running_loop() -> asyncio.AbstractEventLoop | None:
    import asyncio  # lazy: asyncio ~30 ms; 'torchx builtins' skips it

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _resolve_awaitable(value: Awaitable[Any]) -> Any:
    import asyncio  # lazy: asyncio ~30 ms; 'torchx builtins' skips it
    from concurrent.futures import (  # lazy: ~21 ms here; 'torchx builtins' skips it
        ThreadPoolExecutor,
    )

    get_loop = getattr(value, "get_loop", None)
    owner: asyncio.AbstractEventLoop | None = get_loop() if callable(get_loop) else None
    running = _running_loop()
    if owner is not None:
        if owner is running:
            raise RuntimeError(
                "cannot resolve an awaitable role override bound to the event loop currently"
                " running in this thread; `await` it yourself before reading the attribute"
            )
        if owner.is_running():
            return asyncio.run_coroutine_threadsafe(_await(value), owner).result()
        return owner.run_until_complete(_await(value))
    if running is None:
        return asyncio.run(_await(value))
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _await(value)).result()


def resolve_override(overrides: dict[str, Any], name: str) -> Any:
    """Resolves ``overrides[name]`` once and writes the result back.

    A resolved value is read without taking the lock; a producer that raises stays in the
    dict.

    Args:
        overrides: the role's overrides dict.
        name: the attribute being read.

    Returns:
        The resolved value.
    """
    value = overrides[name]
    if isinstance(value, _ResolvedOverride):
        return value.value
    with _lock_for(overrides):
        value = overrides[name]
        if isinstance(value, _ResolvedOverride):
            return value.value
        if _is_awaitable(value):
            result = _resolve_awaitable(value)
        else:
            result = value() if callable(value) else value
        overrides[name] = _ResolvedOverride(result)
        return result
