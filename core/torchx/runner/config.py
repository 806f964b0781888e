"""``.torchxconfig``: INI files holding scheduler run options and CLI/component defaults.

Files are looked up in ``DEFAULT_CONFIG_DIRS`` (``$HOME`` then the cwd, fixed at import
time) unless ``$TORCHXCONFIG`` names the one file to use (``TORCHXCONFIG=""`` disables
config files). Across files the **first** value found wins, so ``$HOME/.torchxconfig``
beats ``./.torchxconfig``; values already in a cfg (e.g. from ``-cfg``) beat every file.
Keys are case-sensitive.

Sections::

    [local_cwd]              # run options of a scheduler (``apply``/``load``)
    log_dir = /tmp/logs

    [cli:run]                # CLI defaults (``get_configs("cli", "run")``)
    component = dist.ddp

    [component:dist.ddp]     # component argument defaults (``load_sections("component")``)
    j = 2x8

    [torchx:tracker]         # tracker names; only the keys are used
    fsspec =

    [tracker:fsspec]         # per-tracker config
    config = /path/to/fsspec.conf

Every reader here goes through :class:`torchx.specs.torchxconfig.TorchXConfig` (which also
documents the ``%`` interpolation rule). This module is cheap to import: it imports no
scheduler and not ``torchx.runner.api``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Optional

from torchx.runner.config_io import dump_scheduler_sections, scheduler_run_opts
from torchx.schedulers import get_scheduler_factories
from torchx.settings import ENV_TORCHXCONFIG
from torchx.specs import torchxconfig as _tc
from torchx.specs.torchxconfig import CONFIG_FILE, CONFIG_PREFIX_DELIM, TorchXConfig

if TYPE_CHECKING:
    from torchx.specs.api import CfgVal

__all__ = [
    "CONFIG_FILE",
    "CONFIG_PREFIX_DELIM",
    "DEFAULT_CONFIG_DIRS",
    "ENV_TORCHXCONFIG",
    "TorchXConfig",
    "apply",
    "dump",
    "find_configs",
    "get_config",
    "get_configs",
    "get_scheduler_factories",
    "load",
    "load_sections",
]

logger: logging.Logger = logging.getLogger(__name__)

DEFAULT_CONFIG_DIRS: list[str] = _tc.DEFAULT_CONFIG_DIRS
"""Directories searched for ``.torchxconfig``, in precedence order; fixed at import time."""


def find_configs(dirs: Optional[Iterable[str]] = None) -> list[str]:
    """Returns the config files to read, highest precedence first.

    Args:
        dirs: directories to look in (default ``DEFAULT_CONFIG_DIRS``); ignored when
            ``$TORCHXCONFIG`` is set.

    Returns:
        ``[$TORCHXCONFIG]`` when set to a path (any readable path that is not a directory,
        ``/dev/null`` included), ``[]`` when set to ``""``, otherwise each readable
        ``{d}/.torchxconfig`` in ``dirs`` order.

    Raises:
        FileNotFoundError: ``$TORCHXCONFIG`` names something missing, unreadable or a
            directory.
    """
    return _tc.find_configs(dirs or DEFAULT_CONFIG_DIRS)


def _read(dirs: Optional[Iterable[str]]) -> TorchXConfig:
    return TorchXConfig.from_files(find_configs(dirs))


def apply(scheduler: str, cfg: dict[str, CfgVal], dirs: Optional[Iterable[str]] = None) -> None:
    """Fills the keys missing from ``cfg`` with the ``[scheduler]`` run options of the config files.

    Args:
        scheduler: the scheduler name (also the section name).
        cfg: the run config to complete, in place; its existing keys are kept.
        dirs: directories to look in (see :func:`find_configs`).
    """
    config = _read(dirs)
    if config.section(scheduler):
        opts = scheduler_run_opts(scheduler, get_scheduler_factories())
        config.apply_run_opts(scheduler, cfg, opts)
        logger.info("loaded configs from %s", ", ".join(config.sources))


def load(scheduler: str, f: IO[str], cfg: dict[str, CfgVal]) -> None:
    """Loads the ``[scheduler]`` run options of one config file into ``cfg``.

    Keys already in ``cfg`` are kept. ``None`` maps to None; other values are cast with
    the scheduler's ``runopt.cast_to_type``; keys that are not run options are skipped
    with a warning.

    Args:
        scheduler: the scheduler name (also the section name).
        f: the open config file.
        cfg: the run config to complete, in place.

    Raises:
        ValueError: ``scheduler`` is not registered.
    """
    config = TorchXConfig.from_text(f.read(), getattr(f, "name", "<text>"))
    if not config.section(scheduler):
        return
    opts = scheduler_run_opts(scheduler, get_scheduler_factories())
    config.apply_run_opts(scheduler, cfg, opts)


def dump(f: IO[str], schedulers: Optional[list[str]] = None, required_only: bool = False) -> None:
    """Writes a ``[scheduler]`` section with the run options of each scheduler.

    Required options are written as ``#FIXME:({type}) {help}`` placeholders; optional
    ones as their defaults (lists joined by ``;``, dicts as ``k:v;...``, empty as ``None``).
    A scheduler whose module cannot be imported is skipped with a warning.

    Args:
        f: the file to write to.
        schedulers: the schedulers to dump (default: every registered scheduler).
        required_only: write only the required options.
    """
    factories = get_scheduler_factories()
    names = schedulers if schedulers else list(factories)
    dump_scheduler_sections(f, names, factories, required_only)


def load_sections(prefix: str, dirs: Optional[Iterable[str]] = None) -> dict[str, dict[str, str]]:
    """Reads every ``[{prefix}:{name}]`` section (both parts non-empty).

    Args:
        prefix: the section prefix, e.g. ``"component"``.
        dirs: directories to look in (see :func:`find_configs`).

    Returns:
        ``{name: {key: value}}``; across files the first value of a key wins.
    """
    return _read(dirs).sections(prefix)


def get_configs(prefix: str, name: str, dirs: Optional[Iterable[str]] = None) -> dict[str, str]:
    """Reads the section ``[{prefix}:{name}]``.

    Args:
        prefix: the section prefix, e.g. ``"cli"``.
        name: the section name, e.g. ``"run"``.
        dirs: directories to look in (see :func:`find_configs`).

    Returns:
        ``{key: value}``; across files the first value of a key wins.
    """
    return _read(dirs).section(f"{prefix}{CONFIG_PREFIX_DELIM}{name}")


def get_config(
    prefix: str, name: str, key: str, dirs: Optional[Iterable[str]] = None
) -> Optional[str]:
    """Reads one key of the section ``[{prefix}:{name}]``.

    Args:
        prefix: the section prefix.
        name: the section name.
        key: the key (case-sensitive).
        dirs: directories to look in (see :func:`find_configs`).

    Returns:
        The first value found, or None.
    """
    return _read(dirs).get(f"{prefix}{CONFIG_PREFIX_DELIM}{name}", key)
