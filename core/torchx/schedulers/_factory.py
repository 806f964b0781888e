"""The ``SchedulerFactory`` protocol, apart so that ``import torchx.schedulers`` needs no typing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from torchx.schedulers.api import Scheduler

__all__ = ["SchedulerFactory"]


class SchedulerFactory(Protocol):
    """Creates a scheduler: ``factory(session_name, **kwargs) -> Scheduler``.

    Factories must accept arbitrary keyword arguments: the runner passes every
    ``TORCHX_*`` environment variable (lower-cased, prefix removed) to each of them.
    """

    def __call__(self, session_name: str, **kwargs: Any) -> Scheduler[Any]:
        """Creates the scheduler for ``session_name``."""
        ...
