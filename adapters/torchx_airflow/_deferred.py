"""The deferral steps of an ``AppManager``: hand the app to the triggerer, resume after it.

:func:`trigger_for` builds the ``TorchXJobTrigger`` (and the deferral's ``timeout=``, the rest
of ``execution_timeout``), or returns None when the app must be awaited in the worker;
:func:`complete` is ``execute_complete``; :func:`stop_deferred_app` stops the app when Airflow
resumes the task to fail it (deferral timeout, trigger failure). They use the manager's public
methods and the operator's public attributes only.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any, Optional

from torchx_airflow._deferral import (
    WAIT_IN_WORKER,
    host_identity,
    is_host_local,
    wait_in_worker_reason,
)
from torchx_airflow._errors import TorchXAppError
from torchx_airflow._manager import AppManager, Started
from torchx_airflow._reattach import AppSlot
from torchx_airflow._runopts import dryrun, launch_cfg, routing_cfg
from torchx_airflow.triggers._resume import resumed_result
from torchx_airflow.triggers.torchx import TorchXJobTrigger

__all__ = [
    "DUMP_LIMIT",
    "complete",
    "dryrun",
    "launch_cfg",
    "routing_cfg",
    "stop_deferred_app",
    "trigger_for",
]

DUMP_LIMIT = 2000  # the last log lines per replica copied after a deferred wait
DEFERRAL_MARGIN = 60.0  # the trigger stops at the deadline; Airflow's timeout is a backstop


def trigger_for(
    mgr: AppManager, handle: str
) -> Optional[tuple[TorchXJobTrigger, Optional[dt.timedelta]]]:
    """The trigger and deferral timeout for ``handle``; None: await it in the worker.

    Writes the re-attach record first (the triggerer waits: this process may be gone; kept
    even when not ``durable``: a failed deferral stops the app) and pushes ``app_handle``.
    """
    op = mgr.op
    reason = wait_in_worker_reason(handle)
    if reason:
        mgr.log.info("%s", reason)
        return None
    host = host_identity() if is_host_local(handle) else None
    if mgr.store is not None:
        AppSlot(mgr.store, mgr.log).set(handle, mgr.placement(), mgr.try_number)
    mgr.push_handle(handle)
    left = mgr.remaining()
    trigger = TorchXJobTrigger(
        app_handle=handle,
        torchx_conn_id=op.torchx_conn_id,
        scheduler_params=dict(mgr.settings.scheduler_params),
        poll_interval=op.poll_interval,
        worker_host=host,
        on_kill_action=op.on_finish_action,
        deadline=time.time() + left if left is not None else None,  # the trigger enforces it
        startup_timeout=op.startup_timeout,
        stream_logs=op.stream_logs,
        transient_timeout=op.transient_timeout,
    )
    return trigger, dt.timedelta(seconds=left + DEFERRAL_MARGIN) if left is not None else None


def complete(mgr: AppManager, event: dict[str, Any]) -> Any:
    """``execute_complete``: the trigger's event -> logs, result or error (stopping the app)."""
    handle = str(event.get("app_handle", ""))
    mgr.app_handle = handle
    runner = mgr.runner
    if event.get("status") == "error":  # the trigger could not follow the app
        if not event.get("unreachable"):  # an unanswering scheduler: the app may be healthy
            mgr.stop(handle)
        raise TorchXAppError(str(event.get("message")), handle)
    if event.get("status") == WAIT_IN_WORKER:  # the triggerer cannot see this local app
        mgr.log.info("%s", event.get("message"))
        started = Started(handle, None, runner.describe(handle), launched=False)
        try:
            result = mgr.follow(started)
        except BaseException as e:
            mgr.abandon(handle, e)
            raise
        return mgr.finish(result)

    # the lines the trigger did not log yet, then the result (never waits for a kept app)
    log, stream, interval = mgr.log.info, mgr.op.stream_logs, mgr.op.poll_interval
    result = resumed_result(runner, event, on_log=log, stream_logs=stream, wait_interval=interval)
    return mgr.finish(result)


def stop_deferred_app(mgr: AppManager, error: Any) -> None:
    """Stops (per ``on_finish_action``) the app of a deferral that timed out or failed."""
    op = mgr.op
    store = mgr.store
    handle = AppSlot(store, mgr.log).get().app_handle if store is not None else ""
    ti = mgr.ti
    if not handle and op.do_xcom_push and ti is not None:
        handle = str(ti.xcom_pull(task_ids=op.task_id, key="app_handle") or "")
    if not handle:
        mgr.log.warning("the deferral failed (%s); its app handle is unknown", error)
        return
    mgr.stop(handle, f"the deferral failed ({error})")
