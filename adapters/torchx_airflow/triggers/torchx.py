"""``TorchXJobTrigger``: follows a TorchX app from the triggerer while its task is deferred."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Optional

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

    Args:
        app_handle: the app to follow (``scheduler://session/app_id``).
        torchx_conn_id: the ``torchx`` connection the task used (None for none).
        scheduler_params: the scheduler factory parameters the task used (primitives only;
            run options are not needed to follow or cancel an app).
        poll_interval: the longest time between two status checks, in seconds.
    """

    def __init__(
        self,
        app_handle: str,
        torchx_conn_id: Optional[str] = None,
        scheduler_params: Optional[Mapping[str, Any]] = None,
        poll_interval: float = 5.0,
    ) -> None:
        super().__init__()
        self.app_handle = app_handle
        self.torchx_conn_id = torchx_conn_id
        self.scheduler_params = dict(scheduler_params or {})
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Returns the class path and primitive kwargs that rebuild this trigger."""
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "app_handle": self.app_handle,
                "torchx_conn_id": self.torchx_conn_id,
                "scheduler_params": dict(self.scheduler_params),
                "poll_interval": self.poll_interval,
            },
        )

    async def _runner(self) -> Runner:
        from torchx_airflow.hooks.torchx import TorchXHook

        hook = TorchXHook(self.torchx_conn_id, scheduler_params=self.scheduler_params)
        return TorchXHook.make_runner(await hook.aget_settings())

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Yields one event when the app ends, vanishes, or cannot be followed."""
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
        """Cancels the app (called on a user kill of the deferred task, Airflow 3.3+)."""
        runner = await self._runner()
        self.log.info("cancelling TorchX app %s", self.app_handle)
        await asyncio.to_thread(runner.cancel, self.app_handle)
