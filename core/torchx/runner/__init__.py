"""Run apps and components on schedulers: ``get_runner()`` returns a :class:`Runner`.

``get_runner`` and ``Runner`` are loaded on first access, so ``import torchx.runner.config``
(which the named-resource loader does) stays cheap. ``torchx.runner.follow`` (follow a
launched app: logs, deadline, failure message) is a submodule loaded on first access too.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchx.runner import config, follow
    from torchx.runner.api import Runner, get_runner

__all__ = ["Runner", "config", "follow", "get_runner"]

_LAZY = {"Runner": "torchx.runner.api", "get_runner": "torchx.runner.api"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in ("config", "follow"):
        return importlib.import_module(f"torchx.runner.{name}")
    raise AttributeError(f"module 'torchx.runner' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
