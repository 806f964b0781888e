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

Re-attach: local apps are launched detached (they outlive the worker) and the app handle is
kept in the task state store (Airflow 3.3+) once the app has run for 50 ms. A retried or
restarted try waits on the live app instead of launching a duplicate, reuses an app that
SUCCEEDED, and relaunches one that failed or was cancelled. An app that ends within 50 ms is
not kept (that saves an API round trip per short task): like a ``BashOperator`` command, a
retry runs it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Optional, Union

from torchx_airflow._errors import TorchXAppError
from torchx_airflow._reattach import AppSlot, Decision, decide
from torchx_airflow.version_compat import BaseOperator, Context, default_deferrable

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.runner.follow import FollowResult
    from torchx.runner.launch import PerRole
    from torchx.specs.api import AppDef, AppStatus
    from torchx.util.log_tee_helpers import LogTee
    from torchx_airflow._settings import TorchXSettings

__all__ = ["TorchXAppError", "TorchXOperator"]

_XCOM_KEYS = ("app_handle", "app_id", "state", "ui_url", "tracker_run_id")
_DUMP_LIMIT = 2000  # log lines per replica copied after a deferred wait
_JOIN_TIMEOUT = 10.0  # seconds per replica for the log tails to reach the end
# an app still running this long after launch gets its own ``app_handle`` XCom at once; one that
# ended sooner has it in the result (one API round trip less for short tasks)
_HANDLE_PUSH_AFTER = 1.0
# the handle goes to the task state store (re-attach) once the app has run this long: an app
# that ends sooner is not worth an API round trip, and a retry simply launches it again
_STORE_AFTER = 0.05


class TorchXOperator(BaseOperator):
    """Launches a TorchX component or AppDef on a TorchX scheduler and waits for it.

    The task's XCom ``return_value`` is ``{app_handle, app_id, state, ui_url,
    tracker_run_id}``; ``app_handle`` is also pushed under its own key while the app runs (once
    it has run for a second, or before the task defers), and when the app fails (no
    ``return_value`` then) every field is pushed under its own key. Replica logs are copied
    into the task log while waiting. A FAILED or CANCELLED app fails the task with
    :class:`TorchXAppError`, whose message starts with the app's structured error and ends with
    the last log lines of its failed replicas. Killing the task (``on_kill``), or an error while
    it waits in the worker, cancels the app (the wait is core's ``torchx.runner.follow``).

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
        durable: keep the app handle in the task state store (once the app has run for
            50 ms) and re-attach on retry.
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
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
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
        self._app_handle: Optional[str] = None
        self._handle_pushed = False
        self._settings: Optional[TorchXSettings] = None

    # ------------------------------------------------------------------ execute

    def execute(self, context: Context) -> Any:
        """Launches (or re-attaches to) the app, then waits for it or defers."""
        from torchx.schedulers.local_scheduler import prestarted_supervisor

        # a local app's supervisor starts while the connection is read and the app is built
        with prestarted_supervisor(self.scheduler in (None, "local_cwd")):
            settings = self._resolve_settings()
            from torchx_airflow.hooks.torchx import TorchXHook

            runner = TorchXHook.make_runner(settings)
            ti = context.get("ti")
            first_try = getattr(ti, "try_number", None) == 1
            store = context.get("task_state_store") if self.durable else None
            found = AppSlot(store, self.log, first_try)
            handle, app, status = self._attach(runner, found)
            slot = None  # where to keep the handle of an app this try launches
            if handle is None:
                handle, app = self._launch(runner, settings)
                slot = found
        self._app_handle = handle
        if status is not None and status.is_terminal():
            from torchx.runner.follow import FollowResult

            return self._finish(context, FollowResult(handle, status))
        if self.deferrable:
            from torchx_airflow._deferral import wait_in_worker_reason

            reason = wait_in_worker_reason(handle)
            if reason:
                self.log.info("%s", reason)
            else:
                if slot is not None:
                    slot.set(handle)  # the triggerer waits: this process may be gone
                self._push_handle(context, handle)
                self._defer(handle, settings)
        return self._finish(context, self._wait(runner, handle, app, context, slot))

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        """Resumes after ``TorchXJobTrigger`` fired: copies the logs and returns or raises."""
        handle = str(event.get("app_handle", ""))
        self._app_handle = handle
        if event.get("status") == "error":
            raise TorchXAppError(str(event.get("message")), handle)
        from torchx_airflow._deferral import WAIT_IN_WORKER
        from torchx_airflow.hooks.torchx import TorchXHook

        runner = TorchXHook.make_runner(self._resolve_settings())
        if event.get("status") == WAIT_IN_WORKER:  # the triggerer cannot see this local app
            self.log.info("%s", event.get("message"))
            return self._finish(context, self._wait(runner, handle, runner.describe(handle)))
        from torchx.runner.follow import follow

        result = follow(runner, handle, wait_interval=self.poll_interval)  # it has ended
        if self.stream_logs and result.status is not None:
            self._log_tee(runner, handle, runner.describe(handle), result.status).copy(_DUMP_LIMIT)
        return self._finish(context, result)

    def on_kill(self) -> None:
        """Cancels the app (Airflow calls this when the task is killed or times out)."""
        handle = self._app_handle
        if not handle:
            return
        from torchx_airflow.hooks.torchx import TorchXHook

        self.log.info("task killed: cancelling TorchX app %s", handle)
        TorchXHook.make_runner(self._resolve_settings()).cancel(handle)

    # ------------------------------------------------------------------ steps

    def _resolve_settings(self) -> TorchXSettings:
        if self._settings is None:
            from torchx_airflow.hooks.torchx import TorchXHook

            hook = TorchXHook(
                self.torchx_conn_id, scheduler=self.scheduler, scheduler_cfg=self.scheduler_cfg
            )
            self._settings = hook.settings
        return self._settings

    def _attach(
        self, runner: Runner, slot: AppSlot
    ) -> tuple[Optional[str], Optional[AppDef], Optional[AppStatus]]:
        previous = slot.get()
        if previous is None:
            return None, None, None
        status = runner.status(previous)
        decision = decide(status)
        state = status.state.name if status is not None else "GONE"
        self.log.info("app of a previous try: %s is %s -> %s", previous, state, decision.value)
        if decision is Decision.LAUNCH:
            return None, None, None
        return previous, runner.describe(previous), status

    def _launch(self, runner: Runner, settings: TorchXSettings) -> tuple[str, Optional[AppDef]]:
        from torchx.runner.launch import LaunchRequest

        scheduler = runner.config.scheduler(settings.scheduler)
        cfg = settings.scheduler_cfg
        if isinstance(cfg, str):
            cfg = runner.cfg_from_str(scheduler, cfg)
        opts = runner.scheduler_run_opts(scheduler)
        if opts.get("detach") is not None and runner.config.get(scheduler, "detach") is None:
            cfg = {"detach": True, **(cfg or {})}  # local apps outlive the worker
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
        )
        info = runner.dryrun_request(request)
        handle = runner.schedule(info)
        self.log.info("launched TorchX app %s", handle)
        return handle, info.app

    def _defer(self, handle: str, settings: TorchXSettings) -> None:
        from torchx_airflow._deferral import host_identity, is_host_local
        from torchx_airflow.triggers.torchx import TorchXJobTrigger

        trigger = TorchXJobTrigger(
            app_handle=handle,
            torchx_conn_id=self.torchx_conn_id,
            scheduler_params=dict(settings.scheduler_params),
            poll_interval=self.poll_interval,
            worker_host=host_identity() if is_host_local(handle) else None,
        )
        self.defer(trigger=trigger, method_name="execute_complete")

    def _wait(
        self,
        runner: Runner,
        handle: str,
        app: Optional[AppDef],
        context: Optional[Context] = None,
        slot: Optional[AppSlot] = None,
    ) -> FollowResult:
        """Follows the app in the worker (``torchx.runner.follow``): logs, fail-fast, the end.

        An exception while waiting (a task timeout, a failed XCom push) cancels the app.
        """
        from torchx.runner.follow import Follower

        on_log, replicas = None, None
        if self.stream_logs:
            from torchx.util.log_tee_helpers import replicas_of

            known = None if app is not None and app.roles else runner.status(handle)
            on_log, replicas = self.log.info, replicas_of(app, known)
        with Follower(
            runner,
            handle,
            on_log=on_log,
            replicas=replicas,
            app=app,
            log_prefix="[{role}/{replica}] ",
            wait_interval=self.poll_interval,
            join_timeout=_JOIN_TIMEOUT,
        ) as follower:
            # a short app needs neither the re-attach record nor its own app_handle XCom
            ended = follower.wait(_STORE_AFTER)
            if not ended and slot is not None:
                slot.set(handle)
                self.log.info("kept the app handle for re-attach by a later try of this task")
            if not ended and context is not None:
                ended = follower.wait(_HANDLE_PUSH_AFTER - _STORE_AFTER)
                if not ended:
                    self._push_handle(context, handle)
            return follower.result()

    def _push_handle(self, context: Context, handle: str) -> None:
        """Pushes the ``app_handle`` XCom of an app that is still running."""
        self._push(context, "app_handle", handle)
        self._handle_pushed = True

    def _log_tee(
        self, runner: Runner, handle: str, app: Optional[AppDef], status: Optional[AppStatus]
    ) -> LogTee:
        """Copies replica logs into the task log, ``[role/k]``-prefixed; never fails the task."""
        from torchx.util.log_tee_helpers import LogTee, replicas_of

        def unavailable(role: str, k: int, e: BaseException) -> None:
            self.log.info("[%s/%d] (logs unavailable: %s: %s)", role, k, type(e).__name__, e)

        return LogTee(
            runner,
            handle,
            self.log.info,
            replicas=replicas_of(app, status),
            prefix="[{role}/{replica}] ",
            on_error=unavailable,
        )

    def _finish(self, context: Context, result: FollowResult) -> Any:
        from torchx_airflow._status import failure_message, xcom_result

        handle, status = result.app_handle, result.status
        xcom = xcom_result(handle, status)
        if not result.succeeded:
            for key in _XCOM_KEYS:  # a failed task has no return_value: keep the facts
                if key != "app_handle" or not self._handle_pushed:
                    self._push(context, key, xcom[key])
            message = failure_message(
                handle, status, result.tails, deadline_expired=result.deadline_expired
            )
            raise TorchXAppError(message, handle, status)
        self.log.info("TorchX app %s SUCCEEDED", handle)
        return xcom

    @staticmethod
    def _push(context: Context, key: str, value: Any) -> None:
        ti = context.get("ti")
        if ti is not None:
            ti.xcom_push(key=key, value=value)
