"""``TorchXJobTrigger``: follows a TorchX app from the triggerer while its task is deferred."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Optional

from torchx_airflow._deferral import handback_payload, needs_worker
from torchx_airflow._status import event_payload
from torchx_airflow.version_compat import BaseTrigger, TriggerEvent

if TYPE_CHECKING:
    from torchx.runner.api import Runner

__all__ = ["TorchXJobTrigger"]

_FIRST_POLL = 0.1


class TorchXJobTrigger(BaseTrigger):
    """Polls ``Runner.status(app_handle)`` off the event loop until the app ends.

    It yields exactly one event, ``{"status": "success" | "failed" | "error", "app_handle",
    ...}``, and never raises: a problem following the app becomes an ``error`` event. Polls
    start fast (0.1 s) and back off to ``poll_interval``. When a user kills the deferred
    task (Airflow 3.3+), :meth:`on_kill` cancels the app; a triggerer restart does not.
    An app of a host-local scheduler (``local_cwd``) launched on another host than the
    triggerer's is not touched: the one event is ``{"status": "wait_in_worker", ...}`` and the
    task waits for the app in the worker (see ``torchx_airflow._deferral``).

    Args:
        app_handle: the app to follow (``scheduler://session/app_id``).
        torchx_conn_id: the ``torchx`` connection the task used (None for none).
        scheduler_params: the scheduler factory parameters the task used (primitives only;
            run options are not needed to follow or cancel an app).
        poll_interval: the longest time between two status checks, in seconds.
        worker_host: where the app was launched (``_deferral.host_identity()``), for apps of
            host-local schedulers; None: followed from anywhere.
        on_kill_action: the task's ``on_finish_action``: what :meth:`on_kill` does (``cancel``,
            ``keep`` or ``delete``).
    """

    def __init__(
        self,
        app_handle: str,
        torchx_conn_id: Optional[str] = None,
        scheduler_params: Optional[Mapping[str, Any]] = None,
        poll_interval: float = 5.0,
        worker_host: Optional[str] = None,
        on_kill_action: str = "cancel",
    ) -> None:
        super().__init__()
        self.worker_host = worker_host
        self.on_kill_action = on_kill_action
        self.app_handle = app_handle
        self.torchx_conn_id = torchx_conn_id
        self.scheduler_params = dict(scheduler_params or {})
        self.poll_interval = float(poll_interval)

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
        return f"{type(self).__module__}.{type(self).__qualname__}", kwargs

    async def _runner(self) -> Runner:
        from torchx_airflow.hooks.torchx import TorchXHook

        hook = TorchXHook(self.torchx_conn_id, scheduler_params=self.scheduler_params)
        return TorchXHook.make_runner(await hook.aget_settings())

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Yields one event when the app ends, vanishes, or cannot be followed."""
        if self.worker_host and needs_worker(self.app_handle, self.worker_host):
            yield TriggerEvent(handback_payload(self.app_handle, self.worker_host))
            return
        try:
            runner = await self._runner()
            delay = min(_FIRST_POLL, self.poll_interval)
            while True:
                status = await asyncio.to_thread(runner.status, self.app_handle)
                if status is None or status.is_terminal():
                    yield TriggerEvent(event_payload(self.app_handle, status))
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.poll_interval)
        except Exception as e:  # the trigger reports problems as events, never raises
            message = f"could not follow TorchX app {self.app_handle}: {type(e).__name__}: {e}"
            yield TriggerEvent(event_payload(self.app_handle, None, error=message))

    async def on_kill(self) -> None:
        """Cancels (``keep``: leaves, ``delete``: deletes) the app on a user kill (Airflow 3.3+)."""
        if needs_worker(self.app_handle, self.worker_host):
            self.log.warning("cannot cancel %s from this host: it runs elsewhere", self.app_handle)
            return
        from torchx_airflow._cleanup import stop_app

        runner = await self._runner()
        await asyncio.to_thread(stop_app, runner, self.app_handle, self.on_kill_action, self.log)
