"""The Runner: submit AppDefs, components and launch requests to schedulers, manage the apps.

The launch path (see ``docs/internals.md``): :class:`~torchx.runner.launch.LaunchRequest` ->
:func:`~torchx.runner.launch.build_app` -> :meth:`Runner.dryrun` (env injection, then
``Scheduler._prepare_submit``: cfg resolution, workspaces, validation; then
``submit_dryrun``) -> :meth:`Runner.schedule`.
"""

from __future__ import annotations

import builtins
import json
import logging
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

from torchx.runner import _dryrun
from torchx.runner._manage import AppManagementMixin
from torchx.runner._trackers import get_configured_trackers, record_parent_link
from torchx.runner.events import log_event
from torchx.runner.launch import LaunchRequest, build_app
from torchx.schedulers import SchedulerFactory, get_scheduler_factories
from torchx.specs.api import NONE as NONE  # TorchX exports it from here
from torchx.specs.api import AppDef, AppDryRunInfo, AppHandle, CfgVal, Workspace, parse_app_handle
from torchx.specs.torchxconfig import TorchXConfig, merge_defaults

if TYPE_CHECKING:
    from torchx.schedulers.api import Scheduler

__all__ = ["Runner", "get_configured_trackers", "get_runner"]

logger: logging.Logger = logging.getLogger(__name__)

DEFAULT_SESSION_NAME = "torchx"


def _event_json(cfg: Optional[Mapping[str, CfgVal]]) -> Optional[str]:
    return json.dumps(dict(cfg), default=str) if cfg else None


class Runner(AppManagementMixin):
    """Submits apps to schedulers and tracks them by app handle.

    Use it as a context manager (or call :meth:`close`) so the schedulers it creates
    are closed. App management (``status``, ``wait``, ``cancel``, ``delete``,
    ``describe``, ``log_lines``, ``list``) is inherited from ``AppManagementMixin``.

    Args:
        name: the session name used in app handles (``{scheduler}://{name}/{app_id}``).
        scheduler_factories: ``{scheduler name: factory}``; None means
            ``get_scheduler_factories()``.
        component_defaults: ``{component: {param: value}}`` defaults for components.
        scheduler_params: keyword arguments for every scheduler factory; they are merged
            over the ``TORCHX_*`` environment variables (lower-cased, prefix removed).
        config: the ``.torchxconfig`` to use (e.g. ``TorchXConfig.from_text(...)``); None
            means the discovered files, read when first needed. It names the trackers, and
            for :meth:`dryrun_request`/:meth:`launch` it also gives the default scheduler,
            ``[<scheduler>]`` run options and (when given) ``[component:<name>]`` defaults.
    """

    def __init__(
        self,
        name: str = "",
        scheduler_factories: Optional[Mapping[str, SchedulerFactory]] = None,
        component_defaults: Optional[Mapping[str, Mapping[str, str]]] = None,
        scheduler_params: Optional[Mapping[str, Any]] = None,
        *,
        config: Optional[TorchXConfig] = None,
    ) -> None:
        self._name = name
        self._config = config
        self._discovered: Optional[TorchXConfig] = None
        if scheduler_factories is None:
            scheduler_factories = get_scheduler_factories()
        self._scheduler_factories: dict[str, SchedulerFactory] = dict(scheduler_factories)
        self._scheduler_params: dict[str, Any] = {
            **_dryrun.scheduler_params_from_env(),
            **(scheduler_params or {}),
        }
        self._component_defaults: dict[str, Mapping[str, str]] = dict(component_defaults or {})
        self._scheduler_instances: dict[str, Scheduler[Any]] = {}
        self._apps: dict[AppHandle, AppDef] = {}

    @property
    def config(self) -> TorchXConfig:
        """The runner's ``.torchxconfig`` (the given one, else the discovered files)."""
        if self._config is not None:
            return self._config
        if self._discovered is None:
            self._discovered = TorchXConfig.discover()
        return self._discovered

    def _defaults(self) -> dict[str, dict[str, str]]:
        from_config = self._config.component_defaults() if self._config is not None else None
        return merge_defaults(self._component_defaults, from_config)

    # ---------------------------------------------------------------- launch requests

    def dryrun_request(self, request: LaunchRequest) -> AppDryRunInfo[Any]:
        """Builds the AppDef of ``request`` and dry-runs it on its scheduler.

        The scheduler is ``request.scheduler``, else the config's ``[cli:run] scheduler``,
        else ``local_cwd``; ``request.cfg`` (dict or ``k=v,...``) is completed by the
        config's ``[<scheduler>]`` section.

        Args:
            request: what to launch.

        Returns:
            The dry-run info (``.request`` is what :meth:`schedule` would submit).
        """
        scheduler = self.config.scheduler(request.scheduler)
        cfg = self._request_cfg(scheduler, request.cfg)
        app = build_app(request, self._defaults())
        return self.dryrun(app, scheduler, cfg, request.workspace, request.parent_run_id)

    def launch(self, request: LaunchRequest) -> AppHandle:
        """Launches ``request`` (:meth:`dryrun_request` then :meth:`schedule`).

        Returns:
            The app handle.
        """
        return self.schedule(self.dryrun_request(request))

    def _request_cfg(
        self, scheduler: str, cfg: Union[Mapping[str, CfgVal], str, None]
    ) -> dict[str, CfgVal]:
        if isinstance(cfg, str):
            resolved = self.cfg_from_str(scheduler, cfg)
        elif cfg is None or isinstance(cfg, Mapping):
            resolved = dict(cfg or {})
        else:
            raise ValueError(
                "the run config must be a dict or a `k=v,k2=v2` string, got"
                f" {type(cfg).__name__}: {cfg!r}"
            )
        if self.config.section(scheduler):
            self.config.apply_run_opts(scheduler, resolved, self.scheduler_run_opts(scheduler))
        return resolved

    # ---------------------------------------------------------------- submission

    def run_component(
        self,
        component: str,
        component_args: Union[builtins.list[str], dict[str, Any]],
        scheduler: str,
        cfg: Optional[Mapping[str, CfgVal]] = None,
        workspace: Union[Workspace, str, None] = None,
        parent_run_id: Optional[str] = None,
    ) -> AppHandle:
        """Materializes a component and runs it (``dryrun_component`` then ``schedule``).

        Args:
            component: a builtin name (``dist.ddp``) or ``path/file.py:fn``.
            component_args: CLI-style arguments (a list) or ``{param: value}`` (a dict).
            scheduler: the scheduler name.
            cfg: the scheduler run config.
            workspace: overrides the first role's workspace when non-empty.
            parent_run_id: the tracker parent run (``$TORCHX_PARENT_RUN_ID`` beats it).

        Returns:
            The app handle.
        """
        with log_event("run_component", scheduler, workspace=_ws_str(workspace)) as ctx:
            info = self.dryrun_component(
                component, component_args, scheduler, cfg, workspace, parent_run_id
            )
            handle = self.schedule(info)
            _describe_event(ctx, info, handle)
            return handle

    def dryrun_component(
        self,
        component: str,
        component_args: Union[builtins.list[str], dict[str, Any]],
        scheduler: str,
        cfg: Optional[Mapping[str, CfgVal]] = None,
        workspace: Union[Workspace, str, None] = None,
        parent_run_id: Optional[str] = None,
    ) -> AppDryRunInfo[Any]:
        """Materializes a component and dry-runs it; see :meth:`run_component` for the args.

        Returns:
            The dry-run info (``.request`` is what would be submitted).
        """
        request = LaunchRequest(component=component, component_args=component_args)
        app = build_app(request, self._defaults())
        return self.dryrun(app, scheduler, cfg, workspace, parent_run_id)

    def run(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Optional[Mapping[str, CfgVal]] = None,
        workspace: Union[Workspace, str, None] = None,
        parent_run_id: Optional[str] = None,
        *,
        dryrun: bool = False,
    ) -> Any:
        """Runs an app (``dryrun`` then ``schedule``).

        Args:
            app: the app; it is copied, never mutated.
            scheduler: the scheduler name.
            cfg: the scheduler run config.
            workspace: overrides the first role's workspace when non-empty.
            parent_run_id: the tracker parent run (``$TORCHX_PARENT_RUN_ID`` beats it).
            dryrun: return the ``AppDryRunInfo`` instead of submitting.

        Returns:
            The app handle, or the ``AppDryRunInfo`` with ``dryrun=True``.
        """
        with log_event("run", scheduler, workspace=_ws_str(workspace)) as ctx:
            info = self.dryrun(app, scheduler, cfg, workspace, parent_run_id)
            if dryrun:
                return info
            handle = self.schedule(info)
            _describe_event(ctx, info, handle)
            return handle

    def dryrun(
        self,
        app: AppDef,
        scheduler: str,
        cfg: Optional[Mapping[str, CfgVal]] = None,
        workspace: Union[Workspace, str, None] = None,
        parent_run_id: Optional[str] = None,
    ) -> AppDryRunInfo[Any]:
        """Prepares the scheduler request for ``app`` without submitting it.

        Args:
            app: the app; it is copied, never mutated.
            scheduler: the scheduler name.
            cfg: the scheduler run config (resolved against the scheduler's runopts).
            workspace: overrides the first role's workspace when non-empty.
            parent_run_id: the tracker parent run (``$TORCHX_PARENT_RUN_ID`` beats it).

        Returns:
            The dry-run info; ``.app`` is the prepared copy of the app.

        Raises:
            ValueError: the app is invalid (no roles, no entrypoint, no replicas).
            UnknownSchedulerException: ``scheduler`` is not registered.
        """
        app = _dryrun.copy_and_validate(app)
        parent_run_id = _dryrun.resolve_parent_run_id(parent_run_id)
        _dryrun.inject_env(
            app,
            _dryrun.job_id_for(scheduler, self._name),
            parent_run_id,
            get_configured_trackers(self._config),
        )
        cfg = dict(cfg or {})
        with log_event(
            "dryrun", scheduler, runcfg=_event_json(cfg), workspace=_ws_str(workspace)
        ) as ctx:
            sched = self._scheduler(scheduler)
            resolved = sched._prepare_submit(app, cfg, workspace, scheduler)
            info = sched.submit_dryrun(app, resolved)
            info._scheduler = scheduler
            ctx._torchx_event.app_id = app.name
            ctx._torchx_event.app_image = app.roles[0].image
            ctx._torchx_event.app_metadata = dict(app.metadata)
            return info

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> AppHandle:
        """Submits a dry-run's request.

        Args:
            dryrun_info: the result of :meth:`dryrun` (it knows its scheduler).

        Returns:
            The app handle ``{scheduler}://{session}/{app_id}``.
        """
        scheduler = _require(
            dryrun_info._scheduler,
            "dryrun_info has no scheduler; create it with Runner.dryrun() before schedule()",
        )
        cfg = dryrun_info._cfg
        with log_event("schedule", scheduler, runcfg=_event_json(cfg)) as ctx:
            sched = self._scheduler(scheduler)
            app_id = sched.schedule(dryrun_info)
            handle = f"{scheduler}://{self._name}/{app_id}"
            app = dryrun_info._app
            if app is not None:
                self._apps[handle] = app
                record_parent_link(handle, app, self._config)
                ctx._torchx_event.app_image = app.roles[0].image if app.roles else None
                ctx._torchx_event.app_metadata = dict(app.metadata)
            ctx._torchx_event.app_id = app_id
            return handle

    # ---------------------------------------------------------------- app management


def _ws_str(workspace: Union[Workspace, str, None]) -> Optional[str]:
    return str(workspace) if workspace else None


def _require(value: Optional[str], message: str) -> str:
    if value is None:
        raise ValueError(message)
    return value


def _describe_event(ctx: log_event, info: AppDryRunInfo[Any], handle: AppHandle) -> None:
    event = ctx._torchx_event
    event.scheduler = info._scheduler or event.scheduler
    event.app_id = parse_app_handle(handle).app_id
    app = info._app
    if app is not None:
        event.app_image = app.roles[0].image if app.roles else None
        event.app_metadata = dict(app.metadata)


def get_runner(
    name: Optional[str] = None,
    component_defaults: Optional[Mapping[str, Mapping[str, str]]] = None,
    *,
    config: Optional[TorchXConfig] = None,
    **scheduler_params: Any,
) -> Runner:
    """Returns a Runner over every registered scheduler (session ``torchx``).

    Use it as a context manager so the schedulers it creates are closed::

        with get_runner() as runner:
            handle = runner.run_component("utils.echo", ["--msg", "hi"], "local_cwd")
            print(runner.wait(handle, wait_interval=1))

    Args:
        name: deprecated custom session name.
        component_defaults: ``{component: {param: value}}`` defaults for components.
        config: the ``.torchxconfig`` to use (None: the discovered files).
        **scheduler_params: keyword arguments for every scheduler factory.
    """
    if name:
        warnings.warn(
            "Custom session names are deprecated and will be removed in a future release;"
            f" use the default session name `{DEFAULT_SESSION_NAME}` (got `{name}`)",
            FutureWarning,
            stacklevel=2,
        )
    else:
        name = DEFAULT_SESSION_NAME
    return Runner(
        name,
        get_scheduler_factories(),
        component_defaults,
        scheduler_params=scheduler_params,
        config=config,
    )
