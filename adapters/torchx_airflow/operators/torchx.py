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

The operator is thin: ``execute``, ``execute_complete`` and ``on_kill`` hand the work to an
``AppManager`` (``_manager``: find or launch, follow, finish, the re-attach record and its
owner). Re-attach (``_reattach``): a retry waits on the live app of an earlier try that died,
found by its labels or the task state store, and owns it from then on; an app is used by one
finishing try only (clearing a succeeded task runs a new app). Deadlines and cleanup
(``_cleanup``): the rest of ``execution_timeout`` bounds the deferral and the worker wait; the
app of a failed task is cancelled unless ``on_finish_action="keep"`` or a later try owns it.
Replicas do not get Airflow's secrets (``_runopts``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, ClassVar, Optional, Union

from torchx_airflow._cleanup import check_on_finish_action
from torchx_airflow._errors import TorchXAppError
from torchx_airflow._lineage import LineageMixin
from torchx_airflow._reattach import check_on_other_host
from torchx_airflow._runopts import AIRFLOW_SECRET_ENV, env_allow_list
from torchx_airflow.links.torchx import TorchXAppLink, web_url
from torchx_airflow.version_compat import BaseOperator, Context, TaskDeferred, default_deferrable

if TYPE_CHECKING:
    from torchx.runner.launch import PerRole
    from torchx.specs.api import AppDef
    from torchx_airflow._manager import AppManager

__all__ = ["TorchXAppError", "TorchXOperator"]


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
        env_allow: more worker variables (fnmatch patterns) replicas of ``local_cwd``,
            ``local_docker`` and ``slurm`` inherit, beside the default allow-list
            (``PATH``, ``HOME``, locale...; ``_runopts.DEFAULT_ENV_ALLOW``) and the
            connection's ``env_allow``; Airflow's secrets are never inherited.
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
        on_other_host: what a try does when the ``local_cwd`` (or ``local_docker``) app of an
            earlier try runs on another host (engine): ``fail`` (default; a later retry may
            land there; at most twice per app, then a new app) or ``launch``.
        startup_timeout: seconds the app may take to start running (PENDING); past it the
            task fails with the scheduler's reason and the app is cancelled.
        transient_timeout: seconds status and log calls may fail with transient errors (the
            scheduler unreachable, a dropped connection, a 5xx) before the task gives up
            (default 300); they are retried with back-off meanwhile, and a task that gives up
            leaves the app as it is, for a retry to re-attach to.
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
        "env_allow",
    )
    template_fields_renderers: ClassVar[dict[str, str]] = {
        "component_args": "json",
        "scheduler_cfg": "json",
    }
    ui_color = "#f6d2c8"
    shallow_copy_attrs: Sequence[str] = ("_spare",)  # an open block, not to be copied

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
        env_allow: Optional[Sequence[str]] = None,
        parent_run_id: Optional[str] = None,
        torchx_conn_id: Optional[str] = "torchx_default",
        deferrable: Optional[bool] = None,
        poll_interval: float = 5.0,
        stream_logs: bool = True,
        durable: bool = True,
        on_finish_action: str = "cancel",
        on_other_host: str = "fail",
        startup_timeout: Optional[float] = None,
        transient_timeout: float = 300.0,
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
        self.env_allow = list(env_allow or [])
        self.parent_run_id = parent_run_id
        self.torchx_conn_id = torchx_conn_id
        self.deferrable = default_deferrable() if deferrable is None else deferrable
        self.poll_interval = poll_interval
        self.stream_logs = stream_logs
        self.durable = durable
        self.on_finish_action = check_on_finish_action(on_finish_action, self.task_id)
        self.on_other_host = check_on_other_host(on_other_host, self.task_id)
        self.startup_timeout = startup_timeout
        self.transient_timeout = float(transient_timeout)
        self._manager: Optional[AppManager] = None
        self._spare: Optional[ExitStack] = None  # the block of a prestarted supervisor

    @property
    def app_handle(self) -> Optional[str]:
        """The handle of this try's app, once it has one (None before ``execute``)."""
        manager = getattr(self, "_manager", None)
        return manager.app_handle if manager is not None else None

    @property
    def app_ui_url(self) -> Optional[str]:
        """The URL the "TorchX app" link points at, once the app ended (None before)."""
        manager = getattr(self, "_manager", None)
        return manager.ui_url if manager is not None else None

    @property
    def operator_extra_links(self) -> Collection[Any]:  # type: ignore[override]
        """The "TorchX app" link; once the app ended, only when there is a URL to point at.

        (Airflow stores each link of a finished task as an XCom: skipping an empty one saves
        a round trip per task.) Also read on a ``MappedOperator`` (DAG serialization of
        ``partial().expand()``), which has no manager.
        """
        if getattr(self, "_manager", None) is not None and not web_url(self.app_ui_url):
            return ()
        return (TorchXAppLink(),)

    # ------------------------------------------------------------------ execute

    def render_template_fields(self, context: Context, jinja_env: Any = None) -> None:
        """Starts a local app's supervisor, reads the connection, then renders the fields.

        The connection is read first so its secrets are masked before a field renders them.
        """
        self._prestart(context)
        self._read_connection()
        super().render_template_fields(context, jinja_env)

    def _read_connection(self) -> None:
        """Reads the task's connection once, before its fields render.

        The hook masks the connection's kubeconfig and the credentials in it as it reads
        them; read here, a field templated from them (``env`` from
        ``conn.<id>.extra_dejson.kubeconfig``) is stored and shown masked too. ``execute``
        reuses what was read (:attr:`connection_extras`).
        """
        conn_id = self.torchx_conn_id
        if not conn_id or "{{" in conn_id or self.connection_extras is not None:
            return
        from torchx_airflow.hooks.torchx import TorchXHook  # lazy: hook + runner API, ~35 ms

        self._conn_extras = (conn_id, TorchXHook(conn_id).read_extras())

    @property
    def connection_extras(self) -> Optional[tuple[str, Optional[Mapping[str, Any]]]]:
        """``(connection id, its extras)`` as read before rendering, or None if not read."""
        return getattr(self, "_conn_extras", None)

    def _prestart(self, context: Context) -> None:
        """Starts the supervisor of the ``local_cwd`` app ``execute`` will launch, at once.

        An app's start latency is mostly its supervisor's interpreter start: begun here, it
        overlaps the rendering, Airflow's API calls before ``execute``, the connection read
        and the dry run. Only before a first ``execute`` (not on a resume from deferral) and
        when ``env_allow`` is not a template (``execute`` starts it otherwise).
        """
        ti = context.get("ti")
        if getattr(ti, "next_method", None) or any("{{" in str(p) for p in self.env_allow):
            return
        if getattr(self, "_spare", None) is None:  # rendered twice: one block
            self._spare = self._spare_block()

    def _spare_block(self) -> ExitStack:
        """An open ``prestarted_supervisor`` block for a ``local_cwd`` app (else empty).

        The supervisor starts with the environment the launch leaves it (the default
        allow-list and this task's ``env_allow``, Airflow's secrets dropped); a connection
        that allows or drops more makes the launch start its own instead. Closing the block
        stops a supervisor left unused.
        """
        block = ExitStack()
        if self.scheduler in (None, "local_cwd"):
            from torchx.schedulers.local_scheduler import prestarted_supervisor  # lazy: ~20 ms

            allow, drop = env_allow_list(self.env_allow), list(AIRFLOW_SECRET_ENV)
            block.enter_context(prestarted_supervisor(env_allow=allow, env_drop=drop))
        return block

    def _close_spare(self) -> None:
        """Closes a prestarted supervisor's block that ``execute`` will not use (stops it).

        Closed here, not left to the garbage collector: a block closed by a collection
        would stop its supervisor from whatever code the collection interrupted.
        """
        spare, self._spare = getattr(self, "_spare", None), None
        if spare is not None:
            spare.close()

    def execute(self, context: Context) -> Any:
        """Launches (or re-attaches to) the app, then waits for it or defers."""
        from torchx_airflow._manager import AppManager  # lazy: runner + hook, ~50 ms

        mgr = self._manager = AppManager(self, context)
        spare = getattr(self, "_spare", None) or self._spare_block()
        self._spare = None
        with spare:  # the supervisor started meanwhile runs the app (or is stopped)
            started = mgr.find_or_launch()
        if started.status is not None and started.status.is_terminal():
            from torchx.runner.follow import FollowResult  # lazy: ~9 ms, not at parse

            return mgr.finish(FollowResult(started.handle, started.status))
        try:
            if self.deferrable:
                from torchx_airflow._deferred import trigger_for  # lazy: triggers, ~140 ms

                deferral = trigger_for(mgr, started.handle)
                if deferral is not None:
                    trigger, timeout = deferral
                    self.defer(trigger=trigger, method_name="execute_complete", timeout=timeout)
            result = mgr.follow(started)
        except TaskDeferred:
            raise
        except BaseException as e:
            mgr.abandon(started.handle, e)
            raise
        return mgr.finish(result)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        """Resumes after ``TorchXJobTrigger`` fired: copies the logs and returns or raises."""
        from torchx_airflow._deferred import complete  # lazy: triggers, ~140 ms
        from torchx_airflow._manager import AppManager  # lazy: runner + hook, ~50 ms

        self._manager = AppManager(self, context)
        return complete(self._manager, event)

    def resume_execution(
        self, next_method: str, next_kwargs: Optional[dict[str, Any]], context: Context
    ) -> Any:
        """Resumes a deferred task; a deferral timeout or trigger failure first stops the app."""
        self._close_spare()  # a supervisor prestarted while rendering has no app to run now
        if next_method == "__fail__":  # Airflow's TRIGGER_FAIL_REPR: timeout or trigger error
            from torchx_airflow._deferred import stop_deferred_app  # lazy: triggers, ~140 ms
            from torchx_airflow._manager import AppManager  # lazy: runner + hook, ~50 ms

            self._manager = AppManager(self, context)
            stop_deferred_app(self._manager, (next_kwargs or {}).get("error"))
        return super().resume_execution(next_method, next_kwargs, context)

    def on_kill(self) -> None:
        """Cancels the app unless a later try owns it (Airflow calls this on a kill or timeout)."""
        mgr = getattr(self, "_manager", None)
        if mgr is None or not mgr.app_handle:
            return
        mgr.stop(mgr.app_handle, "task killed")
