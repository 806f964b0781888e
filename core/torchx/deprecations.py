"""Deprecation helpers: warn about a moved module or a deprecated function or class.

Both warn with :class:`UserWarning` (not ``DeprecationWarning``, which Python hides outside
``__main__``), so that users see the warning.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["deprecated", "deprecated_module"]

_F = TypeVar("_F", bound=Callable[..., Any])


def deprecated_module(old_import: str, new_import: str, *, stacklevel: int = 3) -> None:
    """Warns that the module ``old_import`` moved to ``new_import``.

    Call it at the top of a compatibility module that re-exports the new one.

    Args:
        old_import: the deprecated module path.
        new_import: the module path to import instead.
        stacklevel: passed to :func:`warnings.warn`; 3 points at the importing code when
            called from a module's top level.
    """
    warnings.warn(
        f"[Deprecated] {old_import} has moved to {new_import} and will be removed in a future"
        f" release. Update your import: `from {new_import} import ...` instead of"
        f" `from {old_import} import ...`",
        UserWarning,
        stacklevel=stacklevel,
    )


def deprecated(*, replacement: str | None = None) -> Callable[[_F], _F]:
    """Returns a decorator that warns on every call of the decorated function or class.

    Args:
        replacement: the name of what to use instead, if anything.

    Returns:
        The decorator; the wrapper keeps the wrapped object's name and docstring.
    """

    def decorator(fn: _F) -> _F:
        msg = f"[Deprecated] {fn.__qualname__} is deprecated"
        if replacement:
            msg += f"; use {replacement} instead"
        msg += "."

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            warnings.warn(msg, UserWarning, stacklevel=2)
            return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorator
