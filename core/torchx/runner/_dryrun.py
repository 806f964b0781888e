"""The AppDef preparation steps of ``Runner.dryrun`` (copy, validate, env injection)."""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Mapping
from typing import Optional

from torchx.runner.events import get_session_id_or_create_new
from torchx.settings import (
    ENV_TORCHX_INTERNAL_SESSION_ID,
    ENV_TORCHX_JOB_ID,
    ENV_TORCHX_PARENT_RUN_ID,
    ENV_TORCHX_TRACKERS,
)
from torchx.specs.api import AppDef, macros

__all__ = [
    "copy_and_validate",
    "inject_env",
    "job_id_for",
    "resolve_parent_run_id",
    "scheduler_params_from_env",
]

logger: logging.Logger = logging.getLogger("torchx.runner.api")


def copy_and_validate(app: AppDef) -> AppDef:
    """Deep-copies ``app`` (``Role.overrides`` dicts stay shared) and validates the copy.

    Args:
        app: the caller's AppDef, never mutated.

    Returns:
        The copy.

    Raises:
        ValueError: the app has no roles, a role has no entrypoint, or a role has a
            non-positive number of replicas.
    """
    app = copy.deepcopy(app)
    if not app.roles:
        raise ValueError(f"No roles for app: {app.name}. Did you forget to add roles to AppDef?")
    for role in app.roles:
        if not role.entrypoint:
            raise ValueError(
                f"No entrypoint for role: {role.name}."
                " Did you forget to call role.runs(entrypoint, args, env)?"
            )
        if role.num_replicas <= 0:
            raise ValueError(
                f"Non-positive replicas for role: {role.name}."
                " Did you forget to set role.num_replicas?"
            )
    return app


def resolve_parent_run_id(parent_run_id: Optional[str]) -> Optional[str]:
    """Returns ``$TORCHX_PARENT_RUN_ID`` when set (it beats the argument), else the argument."""
    return os.environ.get(ENV_TORCHX_PARENT_RUN_ID) or parent_run_id


def inject_env(
    app: AppDef,
    job_id: str,
    parent_run_id: Optional[str],
    trackers: Mapping[str, Optional[str]],
) -> None:
    """Adds the torchx job, session, lineage and tracker variables to every role's env.

    Args:
        app: the (copied) AppDef to update in place.
        job_id: the value of ``TORCHX_JOB_ID`` (contains the ``${app_id}`` macro).
        parent_run_id: the parent run id, if any.
        trackers: ``{tracker name: config or None}``.
    """
    session_id = get_session_id_or_create_new()
    for role in app.roles:
        role.env[ENV_TORCHX_JOB_ID] = job_id
        role.env[ENV_TORCHX_INTERNAL_SESSION_ID] = session_id
        if parent_run_id:
            role.env[ENV_TORCHX_PARENT_RUN_ID] = parent_run_id
        if trackers:
            from torchx.tracker.api import (  # lazy: trackers configured only (plugins)
                tracker_config_env_var_name,
            )

            role.env[ENV_TORCHX_TRACKERS] = ",".join(trackers)
            for name, config in trackers.items():
                if config:
                    role.env[tracker_config_env_var_name(name)] = config


def job_id_for(scheduler: str, session_name: str) -> str:
    """Returns ``{scheduler}://{session}/${app_id}`` (the macro is filled by the scheduler)."""
    return f"{scheduler}://{session_name}/{macros.app_id}"


def scheduler_params_from_env() -> dict[str, str]:
    """Returns every ``TORCHX_*`` env var, lower-cased with the prefix removed.

    ``TORCHX_FOO=1`` becomes ``{"foo": "1"}``; the runner passes these as keyword
    arguments to every scheduler factory.
    """
    params: dict[str, str] = {}
    for key, value in os.environ.items():
        lowered = key.lower()
        if lowered.startswith("torchx_"):
            params[lowered.removeprefix("torchx_")] = value
    return params
