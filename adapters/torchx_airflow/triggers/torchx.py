"""``TorchXJobTrigger``: follows a TorchX app from the triggerer while its task is deferred."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any, Optional

from torchx.runner.api import Runner
from torchx.runner.follow import SchedulerUnreachableError, afollow
from torchx.specs import NONE
from torchx.specs.api import AppStatus
from torchx_airflow._cleanup import stop_app
from torchx_airflow._deferral import handback_payload, needs_worker
from torchx_airflow._status import event_payload
from torchx_airflow.hooks.torchx import TorchXHook
from torchx_airflow.triggers._resume import LOG_PREFIX, result_payload
from torchx_airflow.version_compat import BaseTrigger, TriggerEvent

__all__ = ["TorchXJobTrigger"]


class TorchXJobTrigger(BaseTrigger):
    """Follows the app with ``torchx.runner.follow.afollow`` until it ends.

    The worker's follow rules apply (they are the same engine): the task's deadline (the end
    of ``execution_timeout``, as a wall-clock time, so ``airflow dags test``, which runs
    triggers in line and ignores the deferral's timeout, stops at the same time as a
    triggerer), ``startup_timeout`` with the scheduler's reason, fail-fast, and status or log
    calls failing with transient errors retried for ``transient_timeout`` seconds. Each new
    PENDING reason is logged; with ``stream_logs`` each replica's lines are logged as they are
    written, ``[role/k]``-prefixed (the triggerer writes a trigger's log into its task's log).

    It yields exactly one event, ``{"status": "success" | "failed" | "error", "app_handle",
    ...}``, and never raises: the event carries ``deadline_expired``, ``startup_reason``,
    ``cancelled`` and ``logs_shown`` (how many lines of each replica were logged, so the
    resumed task shows only the rest); ``error`` is for definitive problems only (a
    configuration error; or the scheduler did not answer for ``transient_timeout`` seconds:
    then ``unreachable`` is true and the resumed task leaves the app as it is). When a
    user kills the deferred task (Airflow 3.3+), :meth:`on_kill` cancels the app; a triggerer
    restart does not (the new trigger logs the replicas' lines again from their start). An app
    of a host-local scheduler (``local_cwd``) launched on another host than the triggerer's is
    not touched: the one event is ``{"status": "wait_in_worker", ...}`` and the task waits for
    the app in the worker (see ``torchx_airflow._deferral``).

    Args:
        app_handle: the app to follow (``scheduler://session/app_id``).
        torchx_conn_id: the ``torchx`` connection the task used (None for none).
        scheduler_params: the scheduler factory parameters the task used (primitives only;
            run options are not needed to follow or cancel an app).
        poll_interval: the longest time between two status checks, in seconds.
        worker_host: where the app was launched (``_deferral.host_identity()``), for apps of
            host-local schedulers; None: followed from anywhere.
        on_kill_action: the task's ``on_finish_action``: what :meth:`on_kill` does (``cancel``,
            ``keep`` or ``delete``); ``keep`` also keeps the app running at the deadline.
        deadline: the task's deadline, seconds since the epoch (``time.time()``); None: none.
        startup_timeout: seconds (from the trigger's start) the app may take to start.
        transient_timeout: seconds status and log calls may fail transiently.
        stream_logs: log the replicas' lines while deferred.
    """

    def __init__(
        self,
        app_handle: str,
        torchx_conn_id: Optional[str] = None,
        scheduler_params: Optional[Mapping[str, Any]] = None,
        poll_interval: float = 5.0,
        worker_host: Optional[str] = None,
        on_kill_action: str = "cancel",
        deadline: Optional[float] = None,
        startup_timeout: Optional[float] = None,
        transient_timeout: float = 300.0,
        stream_logs: bool = False,
    ) -> None:
        super().__init__()
        self.worker_host = worker_host
        self.on_kill_action = on_kill_action
        self.app_handle = app_handle
        self.torchx_conn_id = torchx_conn_id
        self.scheduler_params = dict(scheduler_params or {})
        self.poll_interval = float(poll_interval)
        self.deadline = None if deadline is None else float(deadline)
        self.startup_timeout = None if startup_timeout is None else float(startup_timeout)
        self.transient_timeout = float(transient_timeout)
        self.stream_logs = bool(stream_logs)
        self._reasons: set[str] = set()

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Returns the class path and primitive kwargs that rebuild this trigger."""
        kwargs: dict[str, Any] = {
            "app_handle": self.app_handle,
            "torchx_conn_id": self.torchx_conn_id,
            "scheduler_params": dict(self.scheduler_params),
            "poll_interval": self.poll_interval,
        }
        if self.worker_host:
            kwargs["worker_host"] = self.worker_host
        if self.on_kill_action != "cancel":
            kwargs["on_kill_action"] = self.on_kill_action
        if self.deadline is not None:
            kwargs["deadline"] = self.deadline
        if self.startup_timeout is not None:
            kwargs["startup_timeout"] = self.startup_timeout
        if self.transient_timeout != 300.0:
            kwargs["transient_timeout"] = self.transient_timeout
        if self.stream_logs:
            kwargs["stream_logs"] = True
        return f"{type(self).__module__}.{type(self).__qualname__}", kwargs

    async def _runner(self) -> Runner:
        hook = TorchXHook(self.torchx_conn_id, scheduler_params=self.scheduler_params)
        return TorchXHook.make_runner(await hook.aget_settings())

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Yields one event: the app ended, vanished, passed its deadline, or is unreachable."""
        if self.worker_host and needs_worker(self.app_handle, self.worker_host):
            yield TriggerEvent(handback_payload(self.app_handle, self.worker_host))
            return

        try:
            runner = await self._runner()
            result = await afollow(
                runner,
                self.app_handle,
                on_log=self._log_line if self.stream_logs else None,
                log_prefix=LOG_PREFIX,
                deadline=self._monotonic_deadline(),
                startup_timeout=self.startup_timeout,
                cancel_at_deadline=self.on_kill_action != "keep",
                cancel_on_failure=False,  # the task decides (on_finish_action) when it resumes
                wait_interval=self.poll_interval,
                on_status=self._log_reason,
                transient_timeout=self.transient_timeout,
            )
        except SchedulerUnreachableError as e:  # the app is left as it is (a retry re-attaches)
            payload = event_payload(self.app_handle, None, error=str(e))
            yield TriggerEvent({**payload, "unreachable": True})
            return
        except Exception as e:  # the trigger reports problems as events, never raises
            message = f"could not follow TorchX app {self.app_handle}: {type(e).__name__}: {e}"
            yield TriggerEvent(event_payload(self.app_handle, None, error=message))
            return
        yield TriggerEvent(result_payload(result))

    def _monotonic_deadline(self) -> Optional[float]:
        if self.deadline is None:
            return None
        return time.monotonic() + (self.deadline - time.time())

    def _log_line(self, line: str) -> None:
        self.log.info("%s", line)

    def _log_reason(self, status: AppStatus) -> None:
        """Logs each new reason a running app gives (why it, or a replica, waits to start)."""
        msg = (status.msg or "").strip()
        if status.is_terminal() or not msg or msg == NONE or msg in self._reasons:
            return
        self._reasons.add(msg)
        self.log.info("TorchX app %s is %s: %s", self.app_handle, status.state.name, msg)

    async def on_kill(self) -> None:
        """Cancels (``keep``: leaves, ``delete``: deletes) the app on a user kill (Airflow 3.3+)."""
        if needs_worker(self.app_handle, self.worker_host):
            self.log.warning("cannot cancel %s from this host: it runs elsewhere", self.app_handle)
            return

        runner = await self._runner()
        await asyncio.to_thread(stop_app, runner, self.app_handle, self.on_kill_action, self.log)
