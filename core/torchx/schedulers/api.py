"""The scheduler API (§11): the ``Scheduler`` base class, run-option and response types.

Beyond TorchX, ``Scheduler.wait_for_change(app_id, timeout)`` lets ``Runner.wait`` return as soon as
an app may have changed instead of at the next poll tick (the base implementation just sleeps).
"""

from __future__ import annotations

import abc
import builtins
import logging
import os
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Optional, TypeVar, Union, cast

from torchx.schedulers._api_opts import StructuredOpts
from torchx.schedulers._api_types import (
    DescribeAppResponse,
    ListAppResponse,
    Stream,
    filter_regex,
    split_lines,
    split_lines_iterator,
)
from torchx.specs.api import NULL_RESOURCE, AppDef, AppDryRunInfo, CfgVal, Role, Workspace, runopts
from torchx.workspace.api import WorkspaceMixin

if TYPE_CHECKING:
    from datetime import datetime

__all__ = [
    "DAYS_IN_2_WEEKS",
    "DescribeAppResponse",
    "ListAppResponse",
    "Scheduler",
    "Stream",
    "StructuredOpts",
    "filter_regex",
    "split_lines",
    "split_lines_iterator",
]

logger: logging.Logger = logging.getLogger(__name__)

T = TypeVar("T")

DAYS_IN_2_WEEKS = 14
"""How far back schedulers that list apps by time look by default (two weeks)."""


class Scheduler(abc.ABC, Generic[T]):
    """Base class of every scheduler; ``T`` is the (resolved) cfg type ``_submit_dryrun`` takes.

    Args:
        backend: the scheduler's backend name.
        session_name: the session the scheduler's apps belong to.
    """

    def __init__(self, backend: str, session_name: str) -> None:
        self.backend = backend
        self.session_name = session_name

    def close(self) -> None:
        """Release what the scheduler holds; the base class holds nothing."""

    def submit(
        self,
        app: AppDef,
        cfg: Mapping[str, CfgVal],
        workspace: Union[Workspace, str, None] = None,
    ) -> str:
        """Resolve ``cfg``, build workspaces, dry-run and schedule ``app``.

        Args:
            app: the application to run (updated in place, as by :meth:`_prepare_submit`).
            cfg: run options (resolved against ``run_opts()``).
            workspace: overrides ``app.roles[0].workspace`` when non-empty.

        Returns:
            The scheduler's app id.
        """
        resolved = self._prepare_submit(app, cfg, workspace)
        return self.schedule(self.submit_dryrun(app, resolved))

    def _prepare_submit(
        self,
        app: AppDef,
        cfg: Mapping[str, CfgVal],
        workspace: Union[Workspace, str, None] = None,
        scheduler: Optional[str] = None,
    ) -> dict[str, CfgVal]:
        """Resolve ``cfg``, apply the workspace argument, build workspaces and validate.

        The one place both ``Runner.dryrun`` and :meth:`submit` prepare an app. A non-empty
        ``workspace`` replaces the first role's workspace, then schedulers that mix in
        ``WorkspaceMixin`` build every role's workspace; other schedulers receive it through
        :meth:`_use_workspace` (``local_cwd`` runs the role in it; the default logs that it
        is ignored).

        Args:
            app: the (private copy of the) app, updated in place.
            cfg: run options.
            workspace: the workspace argument (a Workspace or a workspace string).
            scheduler: the name the scheduler is registered under (default ``backend``).

        Returns:
            The resolved run config.
        """
        name = scheduler or self.backend
        resolved = self.run_opts().resolve(cfg)
        self._pre_build_validate(app, name, resolved)
        if isinstance(self, WorkspaceMixin):
            if workspace:
                _apply_workspace(app.roles[0], workspace)
            self.build_workspaces(app.roles, resolved)
        elif workspace:
            self._use_workspace(app.roles[0], workspace)
        self._validate(app, name, resolved)
        return dict(resolved)

    def _use_workspace(self, role: Role, workspace: Union[Workspace, str]) -> None:
        """Receive the workspace argument (schedulers without ``WorkspaceMixin``).

        The default ignores it (as TorchX does), with a warning unless it is the current
        directory (the CLI's default).
        """
        if _as_workspace(workspace) != _as_workspace(os.getcwd()):
            logger.warning(
                "scheduler `%s` does not support workspaces: ignoring workspace `%s` of role `%s`",
                self.backend,
                workspace,
                role.name,
            )

    @abc.abstractmethod
    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        """Submit the request of a dry run; return the app id."""

    def submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        """Build the request for ``app`` without submitting it.

        Args:
            app: the application.
            cfg: run options (resolved against ``run_opts()`` here).

        Returns:
            The dry-run info, after every role's ``pre_proc`` hook.
        """
        resolved = self.run_opts().resolve(cfg)
        info = self._submit_dryrun(app, cast(T, resolved))
        for role in app.roles:
            info = role.pre_proc(self.backend, info)
        info._app = app
        info._cfg = resolved
        return info

    @abc.abstractmethod
    def _submit_dryrun(self, app: AppDef, cfg: T) -> AppDryRunInfo[Any]:
        """Build the scheduler request."""

    def run_opts(self) -> runopts:
        """Return the run options this scheduler accepts (plus workspace options)."""
        opts = self._run_opts()
        if isinstance(self, WorkspaceMixin):
            opts.update(self.workspace_opts())
        return opts

    def _run_opts(self) -> runopts:
        return runopts()

    @abc.abstractmethod
    def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
        """Describe an app; None means it does not exist."""

    @abc.abstractmethod
    def list(self, cfg: Optional[Mapping[str, CfgVal]] = None) -> builtins.list[ListAppResponse]:
        """List the apps this scheduler can see (``cfg`` may route to a backend)."""

    def exists(self, app_id: str) -> bool:
        """Return whether the app exists (``describe`` is not None)."""
        return self.describe(app_id) is not None

    @abc.abstractmethod
    def _cancel_existing(self, app_id: str) -> None:
        """Cancel an app known to exist."""

    def cancel(self, app_id: str) -> None:
        """Cancel the app if it exists; otherwise do nothing (idempotent)."""
        if self.exists(app_id):
            self._cancel_existing(app_id)

    def delete(self, app_id: str) -> None:
        """Delete the app if it exists (by default this cancels it)."""
        if self.exists(app_id):
            self._delete_existing(app_id)

    def _delete_existing(self, app_id: str) -> None:
        self._cancel_existing(app_id)

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: Optional[str] = None,
        since: Optional[datetime] = None,
        until: Optional[datetime] = None,
        should_tail: bool = False,
        streams: Optional[Stream] = None,
    ) -> Iterable[str]:
        """Iterate over the log lines (each keeping its newline) of replica ``k`` of a role.

        Raises:
            NotImplementedError: the scheduler does not support log iteration.
        """
        raise NotImplementedError(
            f"{self.__class__.__qualname__} does not support application log iteration"
        )

    def wait_for_change(self, app_id: str, timeout: float) -> None:
        """Block until the app's state may have changed or ``timeout`` seconds passed.

        Schedulers that can observe exits override this to return early; the base sleeps.

        Args:
            app_id: the app to watch.
            timeout: the longest time to block, in seconds.
        """
        time.sleep(max(0.0, timeout))

    def set_app_labels(self, app_id: str, labels: Mapping[str, str]) -> None:
        """Add (or overwrite) app labels on an existing app (``torchx.schedulers.labels``).

        Schedulers with ``supports_app_labels`` implement it: afterwards ``describe``
        (``metadata``) and ``list_by_labels`` see the new labels. The base has no labels.

        Args:
            app_id: the app.
            labels: label entries, full keys (``LABEL_PREFIX`` included), label-safe values.

        Raises:
            NotImplementedError: the scheduler's apps carry no labels it can change.
            ValueError: the app does not exist.
        """
        raise NotImplementedError(f"{self.__class__.__qualname__} cannot change app labels")

    def placement(self, cfg: Optional[Mapping[str, CfgVal]] = None) -> str:
        """Where this scheduler's apps live, as seen from this process (re-attach decisions).

        An app launched from a process with one placement can be followed from any process
        with the same placement. ``""`` (the base) means from anywhere that reaches the
        scheduler (clusters); ``local_cwd`` and ``local_docker`` return their host or engine.

        Args:
            cfg: run options (a scheduler may route on them).
        """
        return ""

    def enforce_fail_fast(self, app_id: str) -> None:
        """Stop the replicas still running in an app whose ``describe`` said FAILED.

        Fail-fast is an explicit step, never a side effect of ``describe`` (a read stays a
        read): ``Runner.wait`` and the follow layer (:mod:`torchx.runner.follow`) call it once
        they have seen the app FAILED. The base does nothing, which is right for schedulers
        whose backend stops the other replicas itself (local_cwd's supervisor, Volcano);
        schedulers that must stop them (local_docker, kubernetes plain mode) override it.

        Args:
            app_id: the app that was described as FAILED.
        """

    def _pre_build_validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Validate before workspaces are built; a no-op by default."""

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """Validate before the dry run: every role needs a resource.

        Raises:
            ValueError: a role has ``NULL_RESOURCE``.
        """
        for role in app.roles:
            if role.resource == NULL_RESOURCE:
                raise ValueError(
                    f"No resource for role: {role.name} (image: {role.image})."
                    " Did you forget to attach resource to the role"
                )


def _as_workspace(workspace: Union[Workspace, str]) -> Workspace:
    return Workspace.from_str(workspace) if isinstance(workspace, str) else workspace


def _apply_workspace(role: Role, workspace: Union[Workspace, str]) -> None:
    ws = _as_workspace(workspace)
    logger.info("overriding `%s` role's workspace with `%s`", role.name, ws)
    role.workspace = ws
