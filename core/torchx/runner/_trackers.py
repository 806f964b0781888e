"""Tracker configuration read from ``.torchxconfig`` and the environment."""

from __future__ import annotations

import logging
import os
from typing import Optional

from torchx.runner.config import find_configs
from torchx.settings import ENV_TORCHX_PARENT_RUN_ID, ENV_TORCHX_TRACKERS
from torchx.specs.api import AppDef, AppHandle
from torchx.specs.torchxconfig import TorchXConfig

__all__ = ["get_configured_trackers", "record_parent_link"]

logger: logging.Logger = logging.getLogger("torchx.runner.api")

_warned: set[tuple[str, str]] = set()  # [torchx:tracker] values already warned about


def get_configured_trackers(config: Optional[TorchXConfig] = None) -> dict[str, Optional[str]]:
    """Returns the trackers to configure jobs with: ``{name: config or None}``.

    Names are the keys of ``[torchx:tracker]`` in ``.torchxconfig``, replaced by
    ``$TORCHX_TRACKERS`` (comma-separated) when set. Each config is ``[tracker:NAME]
    config``, overridden by ``$TORCHX_TRACKER_<NAME>_CONFIG``.

    Args:
        config: the config to read (default: the discovered ``.torchxconfig`` files).
    """
    if config is None:
        config = TorchXConfig.from_files(find_configs())
    declared = config.section("torchx:tracker")
    for name, value in declared.items():
        if value and value != name and (name, value) not in _warned:
            _warned.add((name, value))
            logger.warning(
                "ignoring the value of `%s = %s` in [torchx:tracker]: trackers are resolved"
                " by name inside the job; register `%s` as a tracker plugin (or use a"
                " `module:fn` name) and put its config in [tracker:%s] config",
                name,
                value,
                name,
                name,
            )
    names = list(declared)
    env_names = os.environ.get(ENV_TORCHX_TRACKERS)
    if env_names is not None:
        names = [n.strip() for n in env_names.split(",") if n.strip()]
    trackers: dict[str, Optional[str]] = {}
    if names:  # torchx.tracker.api (plugins, lineage) only when a tracker is configured
        from torchx.tracker.api import (  # lazy: trackers configured only (plugins)
            tracker_config_env_var_name,
        )
    for name in names:
        from_file = config.get("tracker:" + name, "config")
        trackers[name] = os.environ.get(tracker_config_env_var_name(name), from_file)
    return trackers


def record_parent_link(
    handle: AppHandle, app: AppDef, config: Optional[TorchXConfig] = None
) -> None:
    """Records ``handle`` as a child of the app's parent run on every configured tracker.

    The parent is the ``TORCHX_PARENT_RUN_ID`` that dryrun injected into the roles (from
    ``parent_run_id``/``--parent_run_id`` or the environment). The link is written by the launcher,
    so lineage holds even for jobs that never call ``app_run_from_env()``. A tracker that fails is
    logged, never fatal to the launch.

    Args:
        handle: the scheduled app's handle (its tracker run id).
        app: the dry-run copy of the app (with the injected env).
        config: the config that names the trackers (default: the discovered files).
    """
    parent = next(
        (r.env[ENV_TORCHX_PARENT_RUN_ID] for r in app.roles if ENV_TORCHX_PARENT_RUN_ID in r.env),
        None,
    )
    if not parent:
        return
    configured = get_configured_trackers(config)
    if not configured:
        return
    from torchx.tracker.api import build_trackers  # lazy: trackers configured only

    for tracker in build_trackers(configured):
        try:
            tracker.add_source(handle, parent)
        except Exception as e:  # a tracker outage must not fail a launch
            logger.warning("could not record parent run `%s` of `%s`: %s", parent, handle, e)
