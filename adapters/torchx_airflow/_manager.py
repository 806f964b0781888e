"""``AppManager``: one task try's app: find or launch it, follow it, finish it, own it.

The operator is thin (``execute``, ``execute_complete``, ``on_kill``); everything it does with
an app is here, after the cncf-kubernetes provider's pod manager: the connection (through
``TorchXHook``), the re-attach record and its owner (``_reattach``, ``_attach``), the run
options (``_runopts``), the wait in the worker (``torchx.runner.follow``), the result, and the
cleanup (``_cleanup``). The manager reads the operator's public attributes only.

Ownership: the try that follows an app owns it (its try number on the app, label
:data:`~torchx_airflow._reattach.OWNER_LABEL`, and in the record). :meth:`AppManager.stop`
(``on_kill``, a failure while the app is alive) cancels an app only while no later try owns it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Optional

from torchx.runner.api import Runner
from torchx.runner.follow import Follower, FollowResult, SchedulerUnreachableError, status_message
from torchx.runner.labels import find_apps, set_app_labels
from torchx.runner.launch import LaunchRequest
from torchx.specs.api import AppDef, AppStatus
from torchx.util.log_tee_helpers import replicas_of
from torchx_airflow._attach import find_earlier, labelled, mark_processed, where_here
from torchx_airflow._cleanup import finish_app, remaining_seconds, stop_app
from torchx_airflow._deferral import write_delays
from torchx_airflow._errors import TorchXAppError
from torchx_airflow._reattach import OWNER_LABEL, AppSlot, task_labels
from torchx_airflow._runopts import dryrun, launch_cfg, routing_cfg
from torchx_airflow._settings import TorchXSettings
from torchx_airflow._status import failure_message, xcom_result
from torchx_airflow.hooks.torchx import TorchXHook
from torchx_airflow.links.torchx import render_ui_url

__all__ = ["TRANSIENT_TIMEOUT", "XCOM_KEYS", "AppManager", "Started"]

XCOM_KEYS = ("app_handle", "app_id", "state", "ui_url", "tracker_run_id")
_JOIN_TIMEOUT = 10.0  # seconds per replica for the log tails to reach the end
_PUSH_RETRY_DELAY = 1.0  # seconds before the app_handle XCom push is tried again
TRANSIENT_TIMEOUT = 300.0
"""Seconds a status or log call may fail (connection errors) before it counts (the trigger's
default too)."""


class Started:
    """The app a try works with: its handle, status when found ended, AppDef, whether new."""

    def __init__(
        self,
        handle: str,
        status: Optional[AppStatus],
        app: Optional[AppDef],
        launched: bool,
    ) -> None:
        self.handle = handle
        self.status = status
        self.app = app
        self.launched = launched


class AppManager:
    """What one try of a ``TorchXOperator`` task does with its app.

    Args:
        op: the operator (its public attributes: component, scheduler, ``on_finish_action``...).
        context: the task's context (None in ``on_kill`` before ``execute``).
    """

    def __init__(self, op: Any, context: Optional[Mapping[str, Any]] = None) -> None:
        self.op = op
        self.log = op.log
        self.context: Mapping[str, Any] = context or {}
        self.ti = self.context.get("ti")
        self.try_number = int(getattr(self.ti, "try_number", 0) or 0)
        self.store = self.context.get("task_state_store")
        self.labels = task_labels(self.context) if op.durable else {}
        self.app_handle: Optional[str] = None
        self.ui_url: Optional[str] = None
        self.handle_pushed = False
        self._settings: Optional[TorchXSettings] = None
        self._runner: Optional[Runner] = None
        self._slot: Optional[AppSlot] = None
        self._last_reason = ""

    # ------------------------------------------------------------------ parts

    @property
    def settings(self) -> TorchXSettings:
        """The connection's settings with the task's scheduler and run options on top."""
        if self._settings is None:
            op = self.op
            hook = TorchXHook(
                op.torchx_conn_id, scheduler=op.scheduler, scheduler_cfg=op.scheduler_cfg
            )
            read = getattr(op, "connection_extras", None)  # read before rendering
            if read is not None and read[0] == op.torchx_conn_id:
                hook.with_extras(read[1])
            self._settings = hook.settings
        return self._settings

    @property
    def runner(self) -> Runner:
        """The ``Runner`` of :attr:`settings` (made once)."""
        if self._runner is None:
            self._runner = TorchXHook.make_runner(self.settings)
        return self._runner

    @property
    def slot(self) -> AppSlot:
        """The re-attach record (a no-op without a store or with ``durable=False``)."""
        if self._slot is None:
            store = self.store if self.op.durable else None
            self._slot = AppSlot(store, self.log, first_try=self.try_number == 1)
        return self._slot

    def scheduler(self) -> str:
        """The scheduler the app goes to."""
        return self.runner.config.scheduler(self.settings.scheduler)

    def placement(self) -> str:
        """Where this process's apps of the scheduler live (``""``: anywhere)."""
        return where_here(self.runner, self.settings, self.scheduler(), self.log)

    # ------------------------------------------------------------------ find or launch

    def find_or_launch(self) -> Started:
        """Re-attaches to (taking ownership of) an earlier try's app, or launches one."""
        scheduler = self.scheduler()
        slot = self.slot
        here = self.placement() if not slot.first_try and slot.get().host else ""
        handle, status = find_earlier(
            self.runner, self.settings, scheduler, slot, self.labels, self.op.on_other_host,
            self.log, here,
        )  # fmt: skip
        if handle is not None:
            self.app_handle = handle
            if status is None or not status.is_terminal():
                self.take_ownership(handle)
            return Started(handle, status, self.runner.describe(handle), launched=False)
        handle, app = self._launch(scheduler)
        self.app_handle = handle
        return Started(handle, None, app, launched=True)

    def _launch(self, scheduler: str) -> tuple[str, Optional[AppDef]]:
        op = self.op
        labels = dict(self.labels)
        if labels:
            labels[OWNER_LABEL] = str(self.try_number)
        request = LaunchRequest(
            component=op.component,
            component_args=op.component_args if op.component is not None else None,
            app=op.app,
            scheduler=scheduler,
            cfg=launch_cfg(self.runner, self.settings, scheduler, op.env_allow),
            workspace=op.workspace or None,
            image=op.image,
            resource=op.resource,
            max_retries=op.max_retries,
            retry_policy=op.role_retry_policy,
            env=op.env,
            parent_run_id=op.parent_run_id,
            labels=labels,
        )
        info = dryrun(self.runner, self.settings, request)
        handle = self.runner.schedule(info)
        self.log.info("launched TorchX app %s", handle)
        return handle, info.app

    # ------------------------------------------------------------------ ownership

    def record(self, handle: str) -> None:
        """Writes the re-attach record: the handle, where it lives, this try as its owner."""
        self.slot.set(handle, self.placement(), self.try_number)

    def take_ownership(self, handle: str) -> None:
        """Makes this try the owner of an earlier try's live app (record and label) first."""
        if self.slot.available:  # found by labels: it lives where this try reaches it
            record = self.slot.get()
            known = record.host if record.app_handle == handle else ""
            self.slot.set(handle, known or self.placement(), self.try_number)
        if self.labels and _labelled(self.runner, handle):
            try:
                set_app_labels(self.runner, handle, {OWNER_LABEL: str(self.try_number)})
            except Exception as e:
                self.log.warning("could not label %s with its owner try: %s", handle, e)
        self.log.info("try %d owns TorchX app %s", self.try_number, handle)

    def newer_owner(self, handle: str) -> int:
        """The try number of a later try that owns ``handle`` now, else 0."""
        owners = [0]
        try:
            owners.append(self.slot.owner_now(handle))
        except Exception as e:  # e.g. the API server unreachable from a dying try
            self.log.warning("could not read the owner of %s from the store: %s", handle, e)
        if self.labels and _labelled(self.runner, handle):
            owners.append(self._owner_label(handle))
        newest = max(owners)
        return newest if self.try_number and newest > self.try_number else 0

    def _owner_label(self, handle: str) -> int:
        scheduler = handle.partition("://")[0]
        try:
            cfg = routing_cfg(self.runner, self.settings, scheduler)
            for found in find_apps(self.runner, scheduler, self.labels, cfg):
                if found.app_handle == handle:
                    return int(found.labels.get(OWNER_LABEL) or 0)
        except Exception as e:
            self.log.warning("could not read the owner label of %s: %s", handle, e)
        return 0

    def stop(self, handle: Optional[str] = None, why: str = "") -> None:
        """Cancels (``on_finish_action``) the app unless a later try owns it; never raises."""
        handle = handle or self.app_handle
        if not handle:
            return
        newer = self.newer_owner(handle)
        if newer:
            self.log.info(
                "TorchX app %s is left running: try %d re-attached to it and owns it", handle, newer
            )
            return
        if why:
            self.log.info("%s: stopping TorchX app %s", why, handle)
        stop_app(self.runner, handle, self.op.on_finish_action, self.log)

    def abandon(self, handle: str, error: BaseException) -> None:
        """Ends this try's follow after ``error``: the app is stopped (:meth:`stop`).

        Except when the scheduler did not answer for ``transient_timeout``: nothing says the app
        is unhealthy then, so it is left as it is and a retry re-attaches to it.
        """
        if isinstance(error, SchedulerUnreachableError):
            self.log.warning("TorchX app %s left as it is (a retry re-attaches): %s", handle, error)
            return
        self.stop(handle)

    # ------------------------------------------------------------------ follow

    def follow(self, started: Started) -> FollowResult:
        """Follows the app in the worker: logs, fail-fast, startup and deadline, PENDING reasons.

        The re-attach record is written (this try as owner) for an app this try launched, then
        the ``app_handle`` XCom; a short local app needs neither (``_deferral.write_delays``).
        """
        op, handle, app = self.op, started.handle, started.app
        on_log, replicas = None, None
        if op.stream_logs:
            known = None if app is not None and app.roles else self.runner.status(handle)
            on_log, replicas = self.log.info, replicas_of(app, known)
        stop = op.on_finish_action != "keep"
        with Follower(
            self.runner,
            handle,
            on_log=on_log,
            on_status=self._on_status,
            replicas=replicas,
            app=app,
            log_prefix="[{role}/{replica}] ",
            timeout=self.remaining(),
            cancel_at_deadline=stop,
            cancel_on_failure=stop,
            startup_timeout=op.startup_timeout,
            wait_interval=op.poll_interval,
            join_timeout=_JOIN_TIMEOUT,
            transient_timeout=getattr(op, "transient_timeout", TRANSIENT_TIMEOUT),
        ) as follower:
            store_after, push_after = write_delays(handle)
            ended = follower.wait(store_after) if store_after else False
            if not ended and started.launched and self.slot.available:
                self.record(handle)
                self.log.info("kept the app handle for re-attach by a later try of this task")
            if not ended and self.ti is not None:
                if push_after > store_after:
                    ended = follower.wait(push_after - store_after)
                if not ended:
                    self.push_handle(handle)
            return follower.result()

    def _on_status(self, status: AppStatus) -> None:
        """Logs the PENDING reason when it changes (a pull error, Kueue's admission message...)."""
        msg = status_message(status)
        if status.state.name not in ("PENDING", "SUBMITTED", "UNSUBMITTED") or not msg:
            return
        if msg != self._last_reason:
            self._last_reason = msg
            self.log.info("TorchX app %s is %s: %s", self.app_handle, status.state.name, msg)

    def remaining(self) -> Optional[float]:
        """What is left of the task's ``execution_timeout`` (None: no timeout)."""
        return remaining_seconds(self.op.execution_timeout, getattr(self.ti, "start_date", None))

    # ------------------------------------------------------------------ finish

    def finish(self, result: FollowResult) -> dict[str, Any]:
        """Marks an ended app processed, applies ``on_finish_action``, returns or raises.

        An app still running (``keep`` past a deadline) is not marked: a retry re-attaches
        to it instead of launching a second one beside it.

        Raises:
            TorchXAppError: the app did not succeed (every XCom field pushed first).
        """
        handle, status = result.app_handle, result.status
        if result.succeeded:  # said when seen (the bench times the follow loop by this line)
            self.log.info("TorchX app %s SUCCEEDED", handle)
        if status is None or status.is_terminal():  # no later try (or clear) reuses it
            mark_processed(self.runner, self.slot, handle, self.log, on_app=self.op.durable)
        xcom = xcom_result(handle, status)
        self.ui_url = self.link_url(handle, xcom["ui_url"])
        finish_app(self.runner, handle, self.op.on_finish_action, self.log)
        if not result.succeeded:
            for key in XCOM_KEYS:  # a failed task has no return_value: keep the facts
                if key != "app_handle" or not self.handle_pushed:
                    self.push(key, xcom[key])
            message = failure_message(
                handle,
                status,
                result.tails,
                deadline_expired=result.deadline_expired,
                startup_reason=result.startup_reason,
            )
            raise TorchXAppError(message, handle, status)
        return xcom

    def link_url(self, handle: str, seen: Optional[str]) -> Optional[str]:
        """The extra link's target: the connection's ``ui_url`` template, else ``seen``."""
        try:
            cfg: Mapping[str, Any] = self.launch_options(handle)
        except Exception:
            cfg = {}
        return render_ui_url(self.settings.ui_url, handle, cfg) or seen

    def launch_options(self, handle: str) -> dict[str, Any]:
        """The run options the app went with (``[<scheduler>]`` defaults filled in)."""
        return routing_cfg(self.runner, self.settings, handle.partition("://")[0])

    def push_handle(self, handle: str) -> None:
        """Pushes the ``app_handle`` XCom of an app that is still running, if it can.

        The app is followed whether or not this works: the XCom only shows the handle early
        (the task's ``return_value`` holds it at the end), and failing here would cancel a
        healthy app. An Execution API error (a 5xx while the API server is overloaded, a 409
        when a superseded try of this task writes the same key at the same moment) is
        retried once, then logged.
        """
        for attempt in (1, 2):
            try:
                self.push("app_handle", handle)
            except Exception as e:  # AirflowRuntimeError and the like; never BaseException
                if attempt == 2:
                    self.log.warning(
                        "could not push the app_handle XCom of TorchX app %s (%s); following"
                        " it anyway: the task's return_value will carry the handle",
                        handle,
                        e,
                    )
                    return
                time.sleep(_PUSH_RETRY_DELAY)
            else:
                self.handle_pushed = True
                return

    def push(self, key: str, value: Any) -> None:
        """Pushes one XCom (nothing with ``do_xcom_push=False`` or without a task instance)."""
        if self.ti is not None and self.op.do_xcom_push:
            self.ti.xcom_push(key=key, value=value)


def _labelled(runner: Runner, handle: str) -> bool:
    try:
        return labelled(runner, handle)
    except Exception:
        return False
