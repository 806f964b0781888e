"""The operator's deferral steps and launch run options (kept out of the operator module).

Functions of a ``TorchXOperator`` (``op``): :func:`maybe_defer` hands the app to the triggerer
with the rest of ``execution_timeout`` as the deferral's ``timeout=``; :func:`complete` is
``execute_complete``; :func:`stop_deferred_app` stops the app when Airflow resumes the task to
fail it (deferral timeout, trigger failure); :func:`launch_cfg` builds the run options and
:func:`dryrun` the app (with the connection's ``[named_resources]``).
"""

from __future__ import annotations

import datetime as dt
import time
from typing import TYPE_CHECKING, Any

from torchx_airflow._cleanup import AIRFLOW_SECRET_ENV, remaining_seconds, stop_app
from torchx_airflow._reattach import AppSlot

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.runner.launch import LaunchRequest
    from torchx.specs.api import AppDryRunInfo
    from torchx_airflow._settings import TorchXSettings
    from torchx_airflow.operators.torchx import TorchXOperator
    from torchx_airflow.version_compat import Context

__all__ = [
    "DUMP_LIMIT",
    "complete",
    "dryrun",
    "launch_cfg",
    "maybe_defer",
    "routing_cfg",
    "stop_deferred_app",
]

DUMP_LIMIT = 2000  # the last log lines per replica copied after a deferred wait
DEFERRAL_MARGIN = 60.0  # the trigger stops at the deadline; Airflow's timeout is a backstop


def launch_cfg(runner: Runner, settings: TorchXSettings, scheduler: str) -> dict[str, Any]:
    """Returns the run options: the settings', ``detach`` and ``env_drop`` for local apps.

    Local apps are detached (they outlive the worker) unless configured otherwise, and
    :data:`~torchx_airflow._cleanup.AIRFLOW_SECRET_ENV` is added to ``env_drop`` (so replicas
    do not inherit Airflow's secrets) where the scheduler has that option.
    """
    cfg = settings.scheduler_cfg
    if isinstance(cfg, str):
        cfg = runner.cfg_from_str(scheduler, cfg)
    out: dict[str, Any] = dict(cfg or {})
    opts = runner.scheduler_run_opts(scheduler)
    if opts.get("detach") is not None and runner.config.get(scheduler, "detach") is None:
        out.setdefault("detach", True)
    if opts.get("env_drop") is not None:
        mine = out.get("env_drop") or runner.config.get(scheduler, "env_drop") or []
        mine = mine.split(";") if isinstance(mine, str) else list(mine)
        out["env_drop"] = [*AIRFLOW_SECRET_ENV, *mine]
    return out


def routing_cfg(runner: Runner, settings: TorchXSettings, scheduler: str) -> dict[str, Any]:
    """The run options the app was launched with, ``[<scheduler>]`` defaults filled in.

    What ``Scheduler.list`` needs to look where the app went (a Kubernetes namespace).
    """
    cfg = launch_cfg(runner, settings, scheduler)
    runner.config.apply_run_opts(scheduler, cfg, runner.scheduler_run_opts(scheduler))
    return cfg


def dryrun(runner: Runner, settings: TorchXSettings, request: LaunchRequest) -> AppDryRunInfo[Any]:
    """Dry-runs ``request``; ``[named_resources]`` of the connection's text apply meanwhile."""
    if "named_resources" in settings.torchxconfig:
        from torchx.specs import named_resources

        with named_resources.using(runner.config):
            return runner.dryrun_request(request)
    return runner.dryrun_request(request)


def maybe_defer(
    op: TorchXOperator, context: Context, settings: TorchXSettings, handle: str
) -> None:
    """Defers to the triggerer (raises ``TaskDeferred``), unless the app must be awaited here."""
    from torchx_airflow._deferral import host_identity, is_host_local, wait_in_worker_reason
    from torchx_airflow.triggers.torchx import TorchXJobTrigger

    reason = wait_in_worker_reason(handle)
    if reason:
        op.log.info("%s", reason)
        return
    host = host_identity() if is_host_local(handle) else None
    store = context.get("task_state_store")
    if store is not None:  # the triggerer waits: this process may be gone (kept even when not
        AppSlot(store, op.log).set(handle, host or "")  # durable: a failed deferral stops it)
    op._push_handle(context, handle)
    ti = context.get("ti")
    left = remaining_seconds(op.execution_timeout, getattr(ti, "start_date", None))
    trigger = TorchXJobTrigger(
        app_handle=handle,
        torchx_conn_id=op.torchx_conn_id,
        scheduler_params=dict(settings.scheduler_params),
        poll_interval=op.poll_interval,
        worker_host=host,
        on_kill_action=op.on_finish_action,
        deadline=time.time() + left if left is not None else None,  # the trigger enforces it
        startup_timeout=op.startup_timeout,
        stream_logs=op.stream_logs,
    )
    timeout = dt.timedelta(seconds=left + DEFERRAL_MARGIN) if left is not None else None
    op.defer(trigger=trigger, method_name="execute_complete", timeout=timeout)


def complete(op: TorchXOperator, context: Context, event: dict[str, Any]) -> Any:
    """``execute_complete``: the trigger's event -> logs, result or error (stopping the app)."""
    from torchx_airflow._deferral import WAIT_IN_WORKER
    from torchx_airflow._errors import TorchXAppError
    from torchx_airflow.hooks.torchx import TorchXHook

    handle = str(event.get("app_handle", ""))
    op._app_handle = handle
    runner = TorchXHook.make_runner(op._resolve_settings())
    slot = AppSlot(context.get("task_state_store") if op.durable else None, op.log)
    if event.get("status") == "error":  # the trigger could not follow the app
        stop_app(runner, handle, op.on_finish_action, op.log)
        raise TorchXAppError(str(event.get("message")), handle)
    if event.get("status") == WAIT_IN_WORKER:  # the triggerer cannot see this local app
        op.log.info("%s", event.get("message"))
        try:
            result = op._wait(runner, handle, runner.describe(handle), context)
        except BaseException:
            stop_app(runner, handle, op.on_finish_action, op.log)
            raise
        return op._finish(context, runner, result, slot)
    from torchx_airflow.triggers._resume import resumed_result

    # the lines the trigger did not log yet, then the result (never waits for a kept app)
    log, stream, interval = op.log.info, op.stream_logs, op.poll_interval
    result = resumed_result(runner, event, on_log=log, stream_logs=stream, wait_interval=interval)
    return op._finish(context, runner, result, slot)


def stop_deferred_app(op: TorchXOperator, context: Context, error: Any) -> None:
    """Stops (per ``on_finish_action``) the app of a deferral that timed out or failed."""
    from torchx_airflow.hooks.torchx import TorchXHook

    store = context.get("task_state_store")
    handle = AppSlot(store, op.log).get().app_handle if store is not None else ""
    ti = context.get("ti")
    if not handle and op.do_xcom_push and ti is not None:
        handle = str(ti.xcom_pull(task_ids=op.task_id, key="app_handle") or "")
    if not handle:
        op.log.warning("the deferral failed (%s); its app handle is unknown", error)
        return
    op.log.info("the deferral failed (%s): stopping TorchX app %s", error, handle)
    runner = TorchXHook.make_runner(op._resolve_settings())
    stop_app(runner, handle, op.on_finish_action, op.log)
