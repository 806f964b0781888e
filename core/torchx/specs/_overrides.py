"""Resolution of the deprecated ``Role.overrides`` values.

A value in ``overrides`` replaces the attribute of the same name. Callables are
called and awaitables are awaited once; the result is written back into the dict
(which copies of the role share). Resolution is single-flight under a re-entrant
lock per overrides dict. ``asyncio`` is imported only when an awaitable is resolved: every
``import torchx.specs`` (the CLI, each supervisor-side tool) would pay for it otherwise.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

_CO_ITERABLE_COROUTINE = 0x100  # inspect.CO_ITERABLE_COROUTINE, without importing inspect

__all__ = ["resolve_override"]

_LOCKS_GUARD = threading.Lock()
_LOCKS: dict[int, threading.RLock] = {}


def _lock_for(overrides: dict[str, Any]) -> threading.RLock:
    with _LOCKS_GUARD:
        lock = _LOCKS.get(id(overrides))
        if lock is None:
            lock = threading.RLock()
            _LOCKS[id(overrides)] = lock
        return lock


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
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _resolve_awaitable(value: Awaitable[Any]) -> Any:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    get_loop = getattr(value, "get_loop", None)
    owner: asyncio.AbstractEventLoop | None = get_loop() if callable(get_loop) else None
    running = _running_loop()
    if owner is not None:
        if owner is running:
            raise RuntimeError(
                "cannot resolve an awaitable role override from inside the event loop"
                " that owns it; await it yourself before reading the attribute"
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

    Args:
        overrides: the role's overrides dict.
        name: the attribute being read.

    Returns:
        The resolved value.
    """
    with _lock_for(overrides):
        value = overrides[name]
        if _is_awaitable(value):
            value = _resolve_awaitable(value)
        elif callable(value):
            value = value()
        overrides[name] = value
        return value
