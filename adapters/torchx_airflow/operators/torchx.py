"""``TorchXOperator``: one Airflow task = one TorchX app (a component or a prebuilt AppDef).

Example::

    train = TorchXOperator(
        task_id="train",
        component="dist.ddp",
        component_args=["-j", "1x2", "--script", "train.py", "--", "--steps", "100"],
        scheduler="{{ params.scheduler }}",
        resource="cpu.small",
    )

Retries: ``Role.max_retries`` (set it with ``max_retries=``) is handled by the TorchX
scheduler inside one Airflow try; Airflow's ``retries`` re-run the task. They multiply: an
app may run up to ``(retries + 1) * (max_retries + 1)`` times. Prefer scheduler retries for
flaky replicas and keep Airflow retries for infrastructure failures.

Re-attach (``_reattach``): a retry waits on the live app of an earlier try that died, found
by its labels or the task state store; an app is used by one finishing try only (clearing a
succeeded task runs a new app). Deadlines and cleanup (``_cleanup``): the rest of
``execution_timeout`` bounds the deferral and the worker wait; the app of a failed task is
cancelled unless ``on_finish_action="keep"``. Local replicas do not get Airflow's secrets.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Optional, Union

from torchx_airflow._errors import TorchXAppError
from torchx_airflow._lineage import LineageMixin
from torchx_airflow._reattach import AppSlot, check_on_other_host, task_labels
from torchx_airflow.version_compat import BaseOperator, Context, TaskDeferred, default_deferrable

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.runner.follow import FollowResult
    from torchx.runner.launch import PerRole
    from torchx.specs.api import AppDef
    from torchx_airflow._settings import TorchXSettings

__all__ = ["TorchXAppError", "TorchXOperator"]

_XCOM_KEYS = ("app_handle", "app_id", "state", "ui_url", "tracker_run_id")
_JOIN_TIMEOUT = 10.0  # seconds per replica for the log tails to reach the end


class TorchXOperator(LineageMixin, BaseOperator):
    """Launches a TorchX component or AppDef on a TorchX scheduler and waits for it.

    The task's XCom ``return_value`` is ``{app_handle, app_id, state, ui_url,
    tracker_run_id}``; ``app_handle`` is also pushed under its own key while the app runs (at
    once on container and cluster schedulers, once a ``local_cwd`` app has run for a second,
    or before the task defers), and when the app fails (no ``return_value`` then) every field
    is pushed under its own key (no XCom at all with ``do_xcom_push=False``). Replica logs are
    copied into the task log while waiting. A FAILED or CANCELLED app fails the task with
    :class:`TorchXAppError`, whose message starts with the app's structured error and ends with
    the last log lines of its failed replicas. The "TorchX app" extra link points at the app's
    web UI when its scheduler has one.

    Args:
        component: a builtin (``dist.ddp``, ``utils.python``) or ``path/file.py:fn``; templated.
        component_args: the component's CLI-style arguments (list) or ``{param: value}``
            (dict); templated.
        app: a prebuilt AppDef instead of ``component`` (built at parse time: prefer
            ``component`` in DAG files).
        scheduler: the scheduler; default: the connection's, else ``local_cwd``; templated.
        scheduler_cfg: run options (dict or ``k=v,...``) over the connection's; templated.
        workspace: the workspace for the first role (schedulers that build workspaces).
        image: an image for every role, or ``{role: image}``; templated.
        resource: a named resource for every role, or ``{role: name}``; templated.
        max_retries: scheduler-side retries of every role (``Role.max_retries``).
        role_retry_policy: ``APPLICATION``, ``REPLICA`` or ``ROLE`` for every role
            (``Role.retry_policy``; Airflow's own ``retry_policy`` is a different thing).
        env: variables set in every role's env (they beat the role's own); templated.
        parent_run_id: the tracker parent run, e.g. an upstream task's ``tracker_run_id``
            XCom; templated.
        torchx_conn_id: the ``torchx`` connection (None: only these arguments).
        deferrable: wait in the triggerer (``TorchXJobTrigger``) instead of the worker;
            ``local_cwd`` apps are awaited in the worker all the same (a triggerer elsewhere
            could neither follow nor cancel them) unless ``[torchx] defer_local_apps``.
        poll_interval: the longest time between two status checks, in seconds.
        stream_logs: copy replica logs into the task log.
        durable: re-attach a retry to the app of an earlier try that did not see it end
            (task state store and app labels, see the module docstring).
        on_finish_action: ``cancel`` (default: an app still running when the task fails is
            cancelled), ``keep`` (never cancelled) or ``delete`` (cancelled, and deleted with
            its resources once the task is done).
        on_other_host: what a try does when the ``local_cwd`` app of an earlier try runs on
            another host: ``fail`` (default; a later retry may land there) or ``launch``.
        startup_timeout: seconds the app may take to start running (PENDING); past it the
            task fails with the scheduler's reason and the app is cancelled.
        **kwargs: ``BaseOperator`` arguments (``task_id``, ``retries``, ...).
    """

    template_fields: Sequence[str] = (
        "component",
        "component_args",
        "scheduler",
        "scheduler_cfg",
        "image",
        "resource",
        "workspace",
        "parent_run_id",
        "env",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {
        "component_args": "json",
        "scheduler_cfg": "json",
    }
    ui_color = "#f6d2c8"

    def __init__(
        self,
        *,
        component: Optional[str] = None,
        component_args: Union[Sequence[Any], Mapping[str, Any], None] = None,
        app: Optional[AppDef] = None,
        scheduler: Optional[str] = None,
        scheduler_cfg: Union[Mapping[str, Any], str, None] = None,
        workspace: Optional[str] = None,
        image: PerRole = None,
        resource: PerRole = None,
        max_retries: Optional[int] = None,
        role_retry_policy: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        parent_run_id: Optional[str] = None,
        torchx_conn_id: Optional[str] = "torchx_default",
        deferrable: Optional[bool] = None,
        poll_interval: float = 5.0,
        stream_logs: bool = True,
        durable: bool = True,
        on_finish_action: str = "cancel",
        on_other_host: str = "fail",
        startup_timeout: Optional[float] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        from torchx_airflow._cleanup import check_on_finish_action

        if (component is None) == (app is None):
            raise ValueError(
                f"TorchXOperator `{self.task_id}`: pass exactly one of `component` (e.g."
                " 'dist.ddp') or `app` (an AppDef)"
            )
        if app is not None and component_args:
            raise ValueError(
                f"TorchXOperator `{self.task_id}`: `component_args` needs `component`;"
                " an `app` is used as is"
            )
        self.component = component
        self.component_args = component_args if component_args is not None else []
        self.app = app
        self.scheduler = scheduler
        self.scheduler_cfg = scheduler_cfg
        self.workspace = workspace
        self.image = image
        self.resource = resource
        self.max_retries = max_retries
        self.role_retry_policy = role_retry_policy
        self.env = dict(env or {})
        self.parent_run_id = parent_run_id
        self.torchx_conn_id = torchx_conn_id
        self.deferrable = default_deferrable() if deferrable is None else deferrable
        self.poll_interval = poll_interval
        self.stream_logs = stream_logs
        self.durable = durable
        self.on_finish_action = check_on_finish_action(on_finish_action, self.task_id)
        self.on_other_host = check_on_other_host(on_other_host, self.task_id)
        self.startup_timeout = startup_timeout
        self._app_handle: Optional[str] = None
        self._ui_url: Optional[str] = None
        self._handle_pushed = False
        self._executing = False
        self._settings: Optional[TorchXSettings] = None

    @property
    def operator_extra_links(self) -> Collection[Any]:  # type: ignore[override]
        """The "TorchX app" link; once running, only when the app has a web UI.

        (Airflow stores each link of a finished task as an XCom: skipping an empty one saves
        a round trip per task.)
        """
        from torchx_airflow.links.torchx import TorchXAppLink, web_url

        if self._executing and not web_url(self._ui_url):
            return ()
        return (TorchXAppLink(),)

    # ------------------------------------------------------------------ execute

    def execute(self, context: Context) -> Any:
        """Launches (or re-attaches to) the app, then waits for it or defers."""
        from torchx.schedulers.local_scheduler import prestarted_supervisor

        self._executing = True
        # a local app's supervisor starts while the connection is read and the app is built
        with prestarted_supervisor(self.scheduler in (None, "local_cwd")):
            settings = self._resolve_settings()
            from torchx_airflow._attach import find_earlier
            from torchx_airflow.hooks.torchx import TorchXHook

            runner = TorchXHook.make_runner(settings)
            scheduler = runner.config.scheduler(settings.scheduler)
            ti = context.get("ti")
            first_try = getattr(ti, "try_number", None) == 1
            store = context.get("task_state_store") if self.durable else None
            slot = AppSlot(store, self.log, first_try)
            labels = task_labels(context) if self.durable else {}
            handle, status = find_earlier(
                runner, settings, scheduler, slot, labels, self.on_other_host, self.log
            )
            app = runner.describe(handle) if handle is not None else None
            launched = handle is None
            if handle is None:
                handle, app = self._launch(runner, settings, scheduler, labels)
        self._app_handle = handle
        if status is not None and status.is_terminal():
            from torchx.runner.follow import FollowResult

            return self._finish(context, runner, FollowResult(handle, status), slot)
        try:
            if self.deferrable:
                from torchx_airflow._deferred import maybe_defer

                maybe_defer(self, context, settings, handle)
            result = self._wait(runner, handle, app, context, slot if launched else None)
        except TaskDeferred:
            raise
        except BaseException:
            from torchx_airflow._cleanup import stop_app

            stop_app(runner, handle, self.on_finish_action, self.log)
            raise
        return self._finish(context, runner, result, slot)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        """Resumes after ``TorchXJobTrigger`` fired: copies the logs and returns or raises."""
        from torchx_airflow._deferred import complete

        self._executing = True
        return complete(self, context, event)

    def resume_execution(
        self, next_method: str, next_kwargs: Optional[dict[str, Any]], context: Context
    ) -> Any:
        """Resumes a deferred task; a deferral timeout or trigger failure first stops the app."""
        if next_method == "__fail__":  # Airflow's TRIGGER_FAIL_REPR: timeout or trigger error
            from torchx_airflow._deferred import stop_deferred_app

            stop_deferred_app(self, context, (next_kwargs or {}).get("error"))
        return super().resume_execution(next_method, next_kwargs, context)

    def on_kill(self) -> None:
        """Cancels the app (Airflow calls this when the task is killed or times out)."""
        handle = self._app_handle
        if not handle:
            return
        from torchx_airflow._cleanup import stop_app
        from torchx_airflow.hooks.torchx import TorchXHook

        self.log.info("task killed: stopping TorchX app %s", handle)
        runner = TorchXHook.make_runner(self._resolve_settings())
        stop_app(runner, handle, self.on_finish_action, self.log)

    # ------------------------------------------------------------------ steps

    def _resolve_settings(self) -> TorchXSettings:
        if self._settings is None:
            from torchx_airflow.hooks.torchx import TorchXHook

            hook = TorchXHook(
                self.torchx_conn_id, scheduler=self.scheduler, scheduler_cfg=self.scheduler_cfg
            )
            self._settings = hook.settings
        return self._settings

    def _launch(
        self,
        runner: Runner,
        settings: TorchXSettings,
        scheduler: str,
        labels: Mapping[str, str],
    ) -> tuple[str, Optional[AppDef]]:
        from torchx.runner.launch import LaunchRequest
        from torchx_airflow._deferred import dryrun, launch_cfg

        cfg = launch_cfg(runner, settings, scheduler)
        request = LaunchRequest(
            component=self.component,
            component_args=self.component_args if self.component is not None else None,
            app=self.app,
            scheduler=scheduler,
            cfg=cfg,
            workspace=self.workspace or None,
            image=self.image,
            resource=self.resource,
            max_retries=self.max_retries,
            retry_policy=self.role_retry_policy,
            env=self.env,
            parent_run_id=self.parent_run_id,
            labels=labels,
        )
        info = dryrun(runner, settings, request)
        handle = runner.schedule(info)
        self.log.info("launched TorchX app %s", handle)
        return handle, info.app

    def _wait(
        self,
        runner: Runner,
        handle: str,
        app: Optional[AppDef],
        context: Optional[Context] = None,
        slot: Optional[AppSlot] = None,
    ) -> FollowResult:
        """Follows the app in the worker (``torchx.runner.follow``): logs, fail-fast, the end.

        The deadline is the rest of ``execution_timeout``; an exception while waiting (a
        task timeout, a failed XCom push) cancels the app unless ``on_finish_action="keep"``.
        """
        from torchx.runner.follow import Follower
        from torchx_airflow._cleanup import remaining_seconds

        on_log, replicas = None, None
        if self.stream_logs:
            from torchx.util.log_tee_helpers import replicas_of

            known = None if app is not None and app.roles else runner.status(handle)
            on_log, replicas = self.log.info, replicas_of(app, known)
        ti = context.get("ti") if context is not None else None
        stop = self.on_finish_action != "keep"
        with Follower(
            runner,
            handle,
            on_log=on_log,
            replicas=replicas,
            app=app,
            log_prefix="[{role}/{replica}] ",
            timeout=remaining_seconds(self.execution_timeout, getattr(ti, "start_date", None)),
            cancel_at_deadline=stop,
            cancel_on_failure=stop,
            startup_timeout=self.startup_timeout,
            wait_interval=self.poll_interval,
            join_timeout=_JOIN_TIMEOUT,
        ) as follower:
            from torchx_airflow._deferral import host_identity, is_host_local, write_delays

            # the re-attach record, then the app_handle XCom (a short local app needs neither)
            store_after, push_after = write_delays(handle)
            ended = follower.wait(store_after) if store_after else False
            if not ended and slot is not None and slot.available:
                slot.set(handle, host_identity() if is_host_local(handle) else "")
                self.log.info("kept the app handle for re-attach by a later try of this task")
            if not ended and context is not None:
                if push_after > store_after:
                    ended = follower.wait(push_after - store_after)
                if not ended:
                    self._push_handle(context, handle)
            return follower.result()

    def _push_handle(self, context: Context, handle: str) -> None:
        """Pushes the ``app_handle`` XCom of an app that is still running."""
        self._push(context, "app_handle", handle)
        self._handle_pushed = True

    def _finish(self, context: Context, runner: Runner, result: FollowResult, slot: AppSlot) -> Any:
        """Marks the app processed, applies ``on_finish_action``, returns or raises."""
        from torchx_airflow._attach import mark_processed
        from torchx_airflow._cleanup import finish_app
        from torchx_airflow._status import failure_message, xcom_result

        handle, status = result.app_handle, result.status
        if result.succeeded:  # said when seen (the bench times the follow loop by this line)
            self.log.info("TorchX app %s SUCCEEDED", handle)
        # no later try (or cleared task) reuses this app: in the store and on the app
        mark_processed(runner, slot, handle, self.log, on_app=self.durable)
        xcom = xcom_result(handle, status)
        self._ui_url = xcom["ui_url"]
        finish_app(runner, handle, self.on_finish_action, self.log)
        if not result.succeeded:
            for key in _XCOM_KEYS:  # a failed task has no return_value: keep the facts
                if key != "app_handle" or not self._handle_pushed:
                    self._push(context, key, xcom[key])
            message = failure_message(
                handle,
                status,
                result.tails,
                deadline_expired=result.deadline_expired,
                startup_reason=result.startup_reason,
            )
            raise TorchXAppError(message, handle, status)
        return xcom

    def _push(self, context: Context, key: str, value: Any) -> None:
        ti = context.get("ti")
        if ti is not None and self.do_xcom_push:
            ti.xcom_push(key=key, value=value)
