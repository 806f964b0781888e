"""Scheduler bookkeeping shared by the Runner: lazy cached instances, run options, closing."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Optional, Self

from torchx.specs.api import (
    AppDef,
    AppHandle,
    CfgVal,
    UnknownSchedulerException,
    parse_app_handle,
    runopts,
)

if TYPE_CHECKING:
    from torchx.schedulers import SchedulerFactory
    from torchx.schedulers.api import Scheduler

__all__ = ["RunnerBase"]


class RunnerBase:
    """Holds the session name, scheduler factories and the lazily created schedulers."""

    _name: str
    _scheduler_factories: dict[str, SchedulerFactory]
    _scheduler_params: dict[str, Any]
    _scheduler_instances: dict[str, Scheduler[Any]]
    _apps: dict[AppHandle, AppDef]

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc_value: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Literal[False]:
        self.close()
        return False

    def __repr__(self) -> str:
        return (
            f"Runner(name={self._name}, schedulers={self._scheduler_factories}, apps={self._apps})"
        )

    def name(self) -> str:
        """Returns the session name."""
        return self._name

    def close(self) -> None:
        """Closes every scheduler this runner created; the runner can still be used after."""
        for scheduler in self._scheduler_instances.values():
            scheduler.close()
        self._scheduler_instances.clear()

    def scheduler_run_opts(self, scheduler: str) -> runopts:
        """Returns the run options a scheduler accepts.

        Args:
            scheduler: the scheduler name.
        """
        return self._scheduler(scheduler).run_opts()

    def cfg_from_str(self, scheduler: str, *cfg_literal: str) -> dict[str, CfgVal]:
        """Parses ``key=value,...`` strings into a run config, later strings winning.

        Unknown keys are dropped with a warning.

        Args:
            scheduler: the scheduler name.
            *cfg_literal: the strings, e.g. ``"log_dir=/tmp,prepend_cwd=true"``.
        """
        opts = self.scheduler_run_opts(scheduler)
        cfg: dict[str, CfgVal] = {}
        for literal in cfg_literal:
            cfg.update(opts.cfg_from_str(literal))
        return cfg

    def scheduler_backends(self) -> builtins.list[str]:
        """Returns the names of the schedulers this runner can use."""
        return builtins.list(self._scheduler_factories)

    def _scheduler(self, scheduler: str) -> Scheduler[Any]:
        sched = self._scheduler_instances.get(scheduler)
        if sched is None:
            factory = self._scheduler_factories.get(scheduler)
            if factory is None:
                raise _unknown_scheduler(scheduler, self._scheduler_factories)
            sched = factory(self._name, **self._scheduler_params)
            self._scheduler_instances[scheduler] = sched
        return sched

    def _scheduler_app_id(self, app_handle: AppHandle) -> tuple[Scheduler[Any], str, str]:
        backend, _, app_id = parse_app_handle(app_handle)
        return self._scheduler(backend), backend, app_id


def _unknown_scheduler(
    scheduler: str, factories: Mapping[str, SchedulerFactory]
) -> UnknownSchedulerException:
    exc = UnknownSchedulerException(scheduler)
    import difflib  # lazy: only for an error message (difflib ~2 ms)

    close = difflib.get_close_matches(scheduler, builtins.list(factories), n=1)
    hint = f" Did you mean `{close[0]}`?" if close else ""
    available = ", ".join(factories) or "none"
    exc.args = (f"{exc}.{hint} Available schedulers: {available}",)
    return exc
