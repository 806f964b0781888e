"""The ``local_cwd`` scheduler: runs each app under a per-app supervisor process (§11.1).

Unlike TorchX, an app's state lives on disk under the state dir (``TORCHX_HOME("local")`` by
default, or the factory kwarg ``state_dir``), so ``describe``/``log_iter``/``cancel``/``list`` work
from any process, and the library installs no signal handlers. Apps are *attached* by default (the
supervisor stops them when the launching process exits, even on SIGKILL); the runopt
``detach=True`` lets an app outlive its launcher.
"""

from __future__ import annotations

import builtins
import logging
import os
import signal
import subprocess
import time
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Optional, Union

from torchx.schedulers._local._compat import (
    COMBINED_LOG,
    STDERR_LOG,
    STDOUT_LOG,
    AppId,
    AppName,
    LogIterator,
    PopenProtocol,
    RoleName,
)
from torchx.schedulers._local._images import (
    CWDImageProvider,
    ImageProvider,
    LocalDirectoryImageProvider,
)
from torchx.schedulers._local._launch import _LocalAppDef, launch, prestarted_supervisor
from torchx.schedulers._local._logs import iter_log_lines
from torchx.schedulers._local._opts import Opts
from torchx.schedulers._local._procs import host_placement
from torchx.schedulers._local._request import (
    ENV_CUDA_VISIBLE_DEVICES,
    PopenRequest,
    ReplicaParam,
    RequestSettings,
    build_role_params,
    cuda_assignments,
)
from torchx.schedulers._local._request import join_path as _join_PATH  # noqa: N812
from torchx.schedulers._local._state import find_app, list_apps
from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
    filter_regex,
)
from torchx.schedulers.ids import make_unique
from torchx.specs.api import (
    NA,
    AppDef,
    AppDryRunInfo,
    CfgVal,
    Role,
    Workspace,
    is_terminal,
)
from torchx.util.paths import torchx_home_dir

if TYPE_CHECKING:
    from datetime import datetime

__all__ = [
    "COMBINED_LOG",
    "ENV_CUDA_VISIBLE_DEVICES",
    "NA",
    "STDERR_LOG",
    "STDOUT_LOG",
    "AppId",
    "AppName",
    "LogIterator",
    "PopenProtocol",
    "RoleName",
    "CWDImageProvider",
    "ImageProvider",
    "LocalDirectoryImageProvider",
    "LocalScheduler",
    "Opts",
    "PopenRequest",
    "ReplicaParam",
    "SignalException",
    "_LocalAppDef",
    "_join_PATH",
    "create_scheduler",
    "make_unique",
    "prestarted_supervisor",
]

logger: logging.Logger = logging.getLogger(__name__)

DEFAULT_GRACE_PERIOD = 10.0


class SignalException(Exception):
    """Raised by the ``torchx`` CLI's own signal handlers (the library installs none).

    Args:
        msg: the message, e.g. ``"Process 12 got signal: 15"``.
        sigval: the signal received.
    """

    def __init__(self, msg: str, sigval: signal.Signals) -> None:
        super().__init__(msg)
        self.sigval = sigval


class LocalScheduler(Scheduler[Mapping[str, CfgVal]]):
    """Runs apps as local processes, each app owned by a supervisor process.

    Args:
        session_name: the session apps are recorded under.
        image_provider_class: builds the image provider from the cfg.
        cache_size: how many apps this instance tracks for ``close()`` (oldest ended evicted).
        extra_paths: prepended to every replica's ``PATH``.
        state_dir: root of the on-disk app state (default ``TORCHX_HOME("local")``).
        grace_period: default seconds between SIGTERM and SIGKILL.
    """

    def __init__(
        self,
        session_name: str,
        image_provider_class: type[ImageProvider] = CWDImageProvider,
        cache_size: int = 100,
        extra_paths: Optional[list[str]] = None,
        state_dir: Optional[str] = None,
        grace_period: float = DEFAULT_GRACE_PERIOD,
    ) -> None:
        super().__init__("local", session_name)
        if cache_size <= 0:
            raise ValueError("cache size must be greater than zero")
        self._apps: dict[str, _LocalAppDef] = {}
        self._tmp_log_dirs: set[str] = set()
        self._cache_size = cache_size
        self._extra_paths: list[str] = list(extra_paths or [])
        self._image_provider_class = image_provider_class
        self._state_dir = state_dir
        self._grace_period = grace_period

    # -- paths -------------------------------------------------------------------------------

    def _state_root_dir(self) -> str:
        """The state dir, absolute (``pathlib`` costs ~3 ms of a ``torchx run`` start)."""
        if self._state_dir:
            return os.path.abspath(os.path.expanduser(self._state_dir))
        return os.path.abspath(torchx_home_dir("local"))

    def _get_app_log_dir(self, app_id: str, cfg: Mapping[str, CfgVal]) -> tuple[str, bool]:
        """Return ``(the app's log dir, whether output is redirected to files)``."""
        base = cfg.get("log_dir")
        if base:  # absolute: the supervisor does not run in the launcher's working directory
            return os.path.abspath(os.path.join(str(base), self.session_name, app_id)), True
        return os.path.join(self._state_root_dir(), self.session_name, app_id), True

    def _cuda_device_count(self) -> int:
        """Return the number of GPUs (lines of ``nvidia-smi -L``; 0 without the binary)."""
        try:
            result = subprocess.run(
                ["nvidia-smi", "-L"], capture_output=True, text=True, check=False
            )
        except OSError:
            logger.warning("`nvidia-smi` not found; assuming this host has no GPUs")
            return 0
        if result.returncode != 0:
            return 0
        return len([line for line in result.stdout.splitlines() if line.strip()])

    # -- submit ------------------------------------------------------------------------------

    def _run_opts(self) -> Any:
        return Opts.as_runopts()

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """No-op: local replicas run without resource requests."""

    def _use_workspace(self, role: Role, workspace: Union[Workspace, str]) -> None:
        """Runs ``role`` in the workspace directory (with ``CWDImageProvider``).

        Raises:
            ValueError: the workspace maps several projects, or is not a directory.
        """
        ws = Workspace.from_str(workspace) if isinstance(workspace, str) else workspace
        if not ws.is_unmapped_single_project():
            raise ValueError(
                f"{self.backend} runs a role in one local directory, but workspace `{ws}` maps"
                " several projects: pass one directory"
            )
        path = next(iter(ws.projects))
        if not os.path.isdir(path):
            raise ValueError(
                f"workspace `{path}` is not a directory: pass an existing project directory"
                f" ({self.backend} runs the role in it)"
            )
        role.workspace = ws

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[PopenRequest]:
        request = self._to_popen_request(app, cfg)
        return AppDryRunInfo(request, _format_request)

    def _to_popen_request(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> PopenRequest:
        """Build the request: argv and full env of every replica, log files, retry settings."""
        opts = Opts.from_cfg(cfg)
        app_id = make_unique(app.name)
        app_log_dir, _ = self._get_app_log_dir(app_id, cfg)
        cuda = {}
        if opts.auto_set_cuda_visible_devices:
            cuda = cuda_assignments(app, self._cuda_device_count)
        app_dir = os.path.join(self._state_root_dir(), self.session_name, app_id)
        settings = RequestSettings(
            app_id, app_log_dir, self._extra_paths, opts.prepend_cwd, cuda, app_dir, opts.env_allow
        )
        provider = self._image_provider_class(cfg)  # type: ignore[call-arg]
        request = PopenRequest(
            app_id=app_id,
            log_dir=app_log_dir,
            role_params={},
            role_log_dirs={},
            app_dir=app_dir,
            session=self.session_name,
            app_name=app.name,
            detach=bool(opts.detach),
            grace_period=float(opts.grace_period or self._grace_period),
            env_drop=list(opts.env_drop or []),
            env_allow=None if opts.env_allow is None else list(opts.env_allow),
        )
        for role in app.roles:
            params, log_dirs = build_role_params(role, provider, settings)
            request.role_params[role.name] = params
            request.role_log_dirs[role.name] = log_dirs
            request.max_retries[role.name] = role.max_retries
            request.retry_policies[role.name] = role.retry_policy.value
            request.images[role.name] = role.image
        return request

    def schedule(self, dryrun_info: AppDryRunInfo[PopenRequest]) -> str:
        """Start the app's supervisor; return the app id.

        Raises:
            IndexError: this instance already tracks ``cache_size`` running apps.
        """
        request: PopenRequest = dryrun_info.request
        if len(self._apps) >= self._cache_size and not self._evict_lru():
            raise IndexError(
                f"App cache size ({self._cache_size}) exceeded. Increase the cache size"
            )
        self._apps[request.app_id] = self._popen(request)
        return request.app_id

    def _popen(self, request: PopenRequest) -> _LocalAppDef:
        """Write the app's files and start its supervisor process (which starts the replicas)."""
        return launch(request)

    def _evict_lru(self) -> bool:
        """Forget the oldest ended app; return False if every tracked app still runs."""
        for app_id, app in self._apps.items():
            if app.is_terminal():
                app.close()
                del self._apps[app_id]
                return True
        return False

    def run_local_job(
        self, app: AppDef, cfg: Optional[Mapping[str, CfgVal]] = None, timeout: float = 86400.0
    ) -> Optional[DescribeAppResponse]:
        """Submit ``app`` and block until it ends (or ``timeout`` seconds pass).

        Returns:
            The final description of the app.
        """
        app_id = self.submit(app, cfg or {})
        deadline = time.monotonic() + timeout
        while (desc := self.describe(app_id)) is not None and not is_terminal(desc.state):
            if time.monotonic() >= deadline:
                break
            self.wait_for_change(app_id, min(deadline - time.monotonic(), 60.0))
        return desc

    # -- queries -----------------------------------------------------------------------------

    def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
        """Describe an app from its on-disk state; None if no such app exists."""
        app = find_app(self._state_root_dir(), self.session_name, app_id)
        return app.describe() if app is not None else None

    def list(self, cfg: Optional[Mapping[str, CfgVal]] = None) -> builtins.list[ListAppResponse]:
        """List this session's apps (from any process), oldest first."""
        return list_apps(self._state_root_dir(), self.session_name)

    def placement(self, cfg: Optional[Mapping[str, CfgVal]] = None) -> str:
        """``host:<hostname>/<boot id>``: apps are followed from this host, until it reboots."""
        return host_placement()

    def wait_for_change(self, app_id: str, timeout: float) -> None:
        """Return as soon as the app's state changes or it ends, or after ``timeout`` seconds."""
        app = find_app(self._state_root_dir(), self.session_name, app_id)
        if app is not None:
            app.wait_for_change(timeout)

    def _cancel_existing(self, app_id: str) -> None:
        """Stop the app (SIGTERM to every replica's group, SIGKILL after the grace period)."""
        app = find_app(self._state_root_dir(), self.session_name, app_id)
        if app is not None:
            app.cancel()

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
        """Iterate over the log lines of replica ``k`` of ``role_name`` (lines keep their newline).

        Raises:
            RuntimeError: the app has no log file for the replica, or ended without writing it.
            ValueError: no such role or replica.
        """
        if since or until:
            warnings.warn(
                "Since and/or until times specified for LocalScheduler.log_iter."
                " These will be ignored and all log lines will be returned",
                stacklevel=2,
            )
        app = find_app(self._state_root_dir(), self.session_name, app_id)
        stream = (streams or Stream.COMBINED).value
        path = app.log_file(role_name, k, stream) if app is not None else None
        if app is None or path is None:
            raise RuntimeError(
                f"app: {app_id} was not configured to log into a file."
                " Did you run it with log_dir set in Dict[str, CfgVal]?"
            )
        lines = iter_log_lines(
            app_id,
            path,
            lambda: is_terminal(app.app_state()),
            should_tail=should_tail,
            pause=app.wait_for_change,
        )
        return filter_regex(regex, lines) if regex else lines

    # -- cleanup -----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the attached apps this instance launched and remove the temp dirs it created."""
        running = [app for app in self._apps.values() if app.attached and not app.is_terminal()]
        for app in running:
            app.app.cancel()
        for app in self._apps.values():
            app.close()
        if self._tmp_log_dirs:
            import shutil  # lazy: ~2 ms of a start; only for temp dirs

            for tmp in self._tmp_log_dirs:
                shutil.rmtree(tmp, ignore_errors=True)
        self._tmp_log_dirs.clear()


def _format_request(request: PopenRequest) -> str:
    """The dry run's text: the request's fields, pretty-printed."""
    from pprint import pformat  # lazy: only when a dry run is printed

    return pformat(asdict(request), indent=2, width=80)


def create_scheduler(
    session_name: str,
    cache_size: int = 100,
    extra_paths: Optional[list[str]] = None,
    image_provider_class: type[ImageProvider] = CWDImageProvider,
    **kwargs: Any,
) -> LocalScheduler:
    """Create a ``local_cwd`` scheduler (installs no signal handlers).

    Args:
        session_name: the session name.
        cache_size: see ``LocalScheduler``; must be positive.
        extra_paths: prepended to every replica's ``PATH``.
        image_provider_class: the image provider (default ``CWDImageProvider``).
        kwargs: ``state_dir`` and ``grace_period`` are used; other keys (every ``TORCHX_*``
            env var arrives here) are ignored.

    Raises:
        ValueError: ``cache_size`` is not positive.
    """
    state_dir = kwargs.get("state_dir")
    grace = kwargs.get("grace_period")
    return LocalScheduler(
        session_name=session_name,
        image_provider_class=image_provider_class,
        cache_size=int(cache_size),
        extra_paths=extra_paths,
        state_dir=str(state_dir) if state_dir else None,
        grace_period=float(grace) if grace not in (None, "") else DEFAULT_GRACE_PERIOD,
    )
