"""The run options a task launches its app with: the connection's, plus what Airflow adds.

Airflow adds, where the scheduler has the option: ``detach`` for local apps (they outlive the
worker), ``env_drop`` (:data:`AIRFLOW_SECRET_ENV`: never inherited) and ``env_allow`` (the
only inherited variables: :data:`DEFAULT_ENV_ALLOW` plus the task's and the connection's own
``env_allow``). No Airflow import: the manager, the re-attach search and the tests use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.runner.launch import LaunchRequest
    from torchx.specs.api import AppDryRunInfo
    from torchx_airflow._settings import TorchXSettings

__all__ = [
    "AIRFLOW_SECRET_ENV",
    "DEFAULT_ENV_ALLOW",
    "dryrun",
    "env_allow_list",
    "launch_cfg",
    "routing_cfg",
]

AIRFLOW_SECRET_ENV = (
    "AIRFLOW_CONN_*",
    "AIRFLOW_VAR_*",
    "AIRFLOW__*SECRET*",
    "AIRFLOW__*PASSWORD*",
    "AIRFLOW__*KEY*",
    "AIRFLOW__*TOKEN*",
    "AIRFLOW__*SQL_ALCHEMY_CONN*",
    "AIRFLOW__*BROKER_URL*",
    "AIRFLOW__*RESULT_BACKEND*",
    "AIRFLOW__*BACKEND_KWARGS*",
    "AIRFLOW__*CONN*",
    "AIRFLOW__*DSN*",
    "AIRFLOW__*_CMD",
    "_AIRFLOW_*",
)
"""Environment variables of the task that replicas never inherit (run option ``env_drop``):
connections, variables, the metadata database and Celery broker/result backend URLs (they
hold passwords), secrets-backend arguments, Sentry DSNs, options whose names hold SECRET,
PASSWORD, KEY, TOKEN or CONN, every ``_CMD`` option (a command printing a secret; ``_SECRET``
variants are covered by ``*SECRET*``) and the image's ``_AIRFLOW_*`` bootstrap variables."""

DEFAULT_ENV_ALLOW = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TMPDIR",
    "TERM",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "TORCHX_*",
)
"""What a replica inherits from the worker by default (run option ``env_allow``, fnmatch
patterns) on schedulers that take it (``local_cwd``, ``local_docker``, ``slurm``): what a
process needs to start (``PATH``, ``HOME``, user, shell, locale, time zone, temp dir), to find
its Python (``PYTHONPATH``, ``VIRTUAL_ENV``, ``CONDA_PREFIX``, ``LD_LIBRARY_PATH``), its GPUs
(``CUDA_VISIBLE_DEVICES``) and torchx's own settings (``TORCHX_*``). Anything else reaches
replicas only through the AppDef, ``env=`` or an explicit ``env_allow`` of the task or
connection; ``env_drop`` still wins."""


def env_allow_list(*extra: Optional[Iterable[str]]) -> list[str]:
    """:data:`DEFAULT_ENV_ALLOW` plus the patterns of each ``extra`` (a list or ``a;b`` text)."""
    out = list(DEFAULT_ENV_ALLOW)
    for more in extra:
        if not more:
            continue
        items = more.split(";") if isinstance(more, str) else list(more)
        out.extend(p.strip() for p in items if p.strip() and p.strip() not in out)
    return out


def _as_list(value: Any) -> list[str]:
    if not value:
        return []
    return value.split(";") if isinstance(value, str) else [str(v) for v in value]


def launch_cfg(
    runner: Runner,
    settings: TorchXSettings,
    scheduler: str,
    env_allow: Optional[Sequence[str]] = None,
) -> dict[str, Any]:
    """Returns the run options: the settings', ``detach``, ``env_drop`` and ``env_allow``.

    Local apps are detached (they outlive the worker) unless configured otherwise;
    :data:`AIRFLOW_SECRET_ENV` is added to ``env_drop`` and :func:`env_allow_list` (with the
    task's ``env_allow`` and the settings') becomes ``env_allow`` where the scheduler has
    those options and the run options do not set them.
    """
    cfg = settings.scheduler_cfg
    if isinstance(cfg, str):
        cfg = runner.cfg_from_str(scheduler, cfg)
    out: dict[str, Any] = dict(cfg or {})
    opts = runner.scheduler_run_opts(scheduler)
    if opts.get("detach") is not None and runner.config.get(scheduler, "detach") is None:
        out.setdefault("detach", True)
    if opts.get("env_drop") is not None:
        mine = _as_list(out.get("env_drop") or runner.config.get(scheduler, "env_drop"))
        out["env_drop"] = [*AIRFLOW_SECRET_ENV, *mine]
    if opts.get("env_allow") is not None:
        given = out.get("env_allow") or runner.config.get(scheduler, "env_allow")
        out["env_allow"] = env_allow_list(_as_list(given), settings.env_allow, env_allow)
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
        from torchx.specs import named_resources  # lazy: torchx.specs, ~19 ms

        with named_resources.using(runner.config):
            return runner.dryrun_request(request)
    return runner.dryrun_request(request)
