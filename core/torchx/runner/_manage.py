"""App management methods of the Runner: status, wait, cancel, delete, describe, logs, list."""

from __future__ import annotations

import builtins
import time
import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Optional

from torchx.runner._base import RunnerBase
from torchx.runner.events import log_event
from torchx.specs.api import (
    AppDef,
    AppHandle,
    AppState,
    AppStatus,
    CfgVal,
    UnknownAppException,
)

if TYPE_CHECKING:
    from datetime import datetime

    from torchx.schedulers.api import ListAppResponse, Stream

__all__ = ["AppManagementMixin"]


class AppManagementMixin(RunnerBase):
    """Operations on submitted apps, addressed by app handle."""

    def status(self, app_handle: AppHandle) -> Optional[AppStatus]:
        """Returns the app's status, or None if the app does not exist (anymore).

        Args:
            app_handle: the app handle.
        """
        sched, backend, app_id = self._scheduler_app_id(app_handle)
        with log_event("status", backend, app_id):
            desc = sched.describe(app_id)
            if desc is None:
                self._apps.pop(app_handle, None)
                return None
            status = AppStatus(
                desc.state,
                desc.num_restarts,
                msg=desc.msg,
                structured_error_msg=desc.structured_error_msg,
                roles=desc.roles_statuses,
            )
            status.ui_url = desc.ui_url
            return status

    def wait(self, app_handle: AppHandle, wait_interval: float = 10) -> Optional[AppStatus]:
        """Blocks until the app reaches a terminal state.

        Between status checks it waits on ``Scheduler.wait_for_change`` (at most
        ``wait_interval`` seconds), so schedulers that observe exits return at once.

        Args:
            app_handle: the app handle.
            wait_interval: the longest time between two status checks, in seconds.

        Returns:
            The terminal status, or None if the app disappeared.
        """
        _, backend, app_id = self._scheduler_app_id(app_handle)
        with log_event("wait", backend, app_id):
            while True:
                status = self.status(app_handle)
                if status is not None and status.state == AppState.FAILED:
                    self.enforce_fail_fast(app_handle)
                if status is None or status.is_terminal():
                    return status
                self.wait_for_change(app_handle, wait_interval)

    def enforce_fail_fast(self, app_handle: AppHandle) -> None:
        """Stops the replicas still running in an app that was seen FAILED.

        An extension of the TorchX API: ``describe`` (hence ``status``) only reads, so the
        step that stops a failed app's other replicas is explicit. ``wait`` and the follow
        layer call it; a caller with its own status loop calls it when it sees FAILED.
        It delegates to ``Scheduler.enforce_fail_fast`` (a no-op where the backend stops
        them itself) and does nothing for a duck-typed scheduler without it.

        Args:
            app_handle: the app handle.
        """
        sched, _, app_id = self._scheduler_app_id(app_handle)
        enforce = getattr(sched, "enforce_fail_fast", None)
        if enforce is not None:
            enforce(app_id)

    def wait_for_change(self, app_handle: AppHandle, timeout: float) -> None:
        """Blocks until the app's state may have changed, or ``timeout`` seconds pass.

        An extension of the TorchX API: it delegates to ``Scheduler.wait_for_change``, which
        returns at once on schedulers that observe state changes (local_cwd) and sleeps
        ``timeout`` on the others.

        Args:
            app_handle: the app handle.
            timeout: the longest time to block, in seconds.
        """
        sched, _, app_id = self._scheduler_app_id(app_handle)
        wait_for_change = getattr(sched, "wait_for_change", None)
        if wait_for_change is None:  # a duck-typed third-party scheduler
            time.sleep(timeout)
        else:
            wait_for_change(app_id, timeout)

    def cancel(self, app_handle: AppHandle) -> None:
        """Cancels the app if it exists and has not finished.

        Args:
            app_handle: the app handle.
        """
        sched, backend, app_id = self._scheduler_app_id(app_handle)
        with log_event("cancel", backend, app_id):
            status = self.status(app_handle)
            if status is not None and not status.is_terminal():
                sched.cancel(app_id)

    def stop(self, app_handle: AppHandle) -> None:
        """Deprecated alias of :meth:`cancel`.

        Args:
            app_handle: the app handle.
        """
        warnings.warn(
            "This method will be deprecated in the future, please use `cancel` instead.",
            PendingDeprecationWarning,
            stacklevel=2,
        )
        self.cancel(app_handle)

    def delete(self, app_handle: AppHandle) -> None:
        """Deletes the app from the scheduler if it exists (schedulers without purge cancel).

        Args:
            app_handle: the app handle.
        """
        sched, backend, app_id = self._scheduler_app_id(app_handle)
        with log_event("delete", backend, app_id):
            if self.status(app_handle) is not None:
                sched.delete(app_id)

    def describe(self, app_handle: AppHandle) -> Optional[AppDef]:
        """Returns the AppDef of an app: the one submitted by this runner, else rebuilt.

        Args:
            app_handle: the app handle.

        Returns:
            The AppDef, or None if the app does not exist.
        """
        sched, backend, app_id = self._scheduler_app_id(app_handle)
        with log_event("describe", backend, app_id):
            app = self._apps.get(app_handle)
            if app is None:
                desc = sched.describe(app_id)
                if desc is not None:
                    app = AppDef(name=app_id, roles=desc.roles, metadata=desc.metadata)
            return app

    def log_lines(
        self,
        app_handle: AppHandle,
        role_name: str,
        k: int = 0,
        regex: Optional[str] = None,
        since: Optional[datetime] = None,
        until: Optional[datetime] = None,
        should_tail: bool = False,
        streams: Optional[Stream] = None,
    ) -> Iterable[str]:
        """Returns an iterator over the log lines of replica ``k`` of a role.

        Args:
            app_handle: the app handle.
            role_name: the role.
            k: the replica (node) index.
            regex: keep only lines matching it.
            since: start time (scheduler-dependent).
            until: end time (scheduler-dependent).
            should_tail: follow the log until the app ends.
            streams: stdout, stderr or combined (scheduler default when None).

        Returns:
            The lines, each keeping its newline.

        Raises:
            UnknownAppException: the app does not exist.
        """
        sched, backend, app_id = self._scheduler_app_id(app_handle)
        with log_event("log_lines", backend, app_id):
            if self.status(app_handle) is None:
                raise UnknownAppException(app_handle)
            return sched.log_iter(
                app_id, role_name, k, regex, since, until, should_tail, streams=streams
            )

    def list(
        self, scheduler: str, cfg: Optional[Mapping[str, CfgVal]] = None
    ) -> builtins.list[ListAppResponse]:
        """Lists the apps a scheduler can see, with their app handles filled in.

        Args:
            scheduler: the scheduler name.
            cfg: scheduler-specific routing (e.g. a namespace).
        """
        with log_event("list", scheduler):
            apps = self._scheduler(scheduler).list(cfg)
            for app in apps:
                app.app_handle = f"{scheduler}://{self._name}/{app.app_id}"
            return apps
