"""argparse actions of the ``torchx`` CLI.

* :class:`ArgOnceAction`: a flag that may be given only once (``-cfg``, ``--parent_run_id``).
* :class:`torchxconfig`: an action whose default comes from the ``[cli:{subcmd}]`` section of
  ``.torchxconfig`` (also given at most once); :class:`torchxconfig_run` and
  :class:`torchxconfig_list` fix the sub-command. A key present in the file replaces the
  declared default, even when empty (``workspace =`` disables the workspace), and makes a
  required option optional.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import weakref
from collections.abc import Iterable, Sequence
from typing import Any, Optional

from torchx.settings import ENV_TORCHXCONFIG

__all__ = ["ArgOnceAction", "torchxconfig", "torchxconfig_list", "torchxconfig_run"]

logger: logging.Logger = logging.getLogger(__name__)


class ArgOnceAction(argparse.Action):
    """Stores the value, but logs an error and exits 1 when the flag is given a second time."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: Optional[str] = None,
    ) -> None:
        """Stores ``values``; exits 1 if the flag was already given."""
        _check_once(self, namespace, option_string)
        setattr(namespace, self.dest, values)


# per parse (keyed by the namespace's id, dropped when it is collected): the dests already given
_seen: dict[int, set[str]] = {}


def _check_once(
    action: argparse.Action, namespace: argparse.Namespace, flag: Optional[str]
) -> None:
    """Exits 1 with one error line when ``action``'s option was already given in this parse."""
    if flag is None:  # a positional
        return
    key = id(namespace)
    seen = _seen.get(key)
    if seen is None:
        seen = _seen[key] = set()
        weakref.finalize(namespace, _seen.pop, key, None)
    if action.dest in seen:
        if logging.getLogger().handlers:
            logger.error("`%s` is specified more than once", flag)
        else:  # logging is configured after parsing: print the CLI's error line
            print(f"torchx: error: `{flag}` is specified more than once", file=sys.stderr)
        sys.exit(1)
    seen.add(action.dest)


class torchxconfig(argparse.Action):
    """Stores the value; the default is read from ``[cli:{subcmd}] {dest}`` of ``.torchxconfig``.

    Args:
        subcmd: the sub-command whose section is read (``run`` reads ``[cli:run]``).
        dest: the argument's destination, also the config key.
        option_strings: the flags.
        required: whether the option is required (False when the config supplies it).
        default: the default when the config does not have the key.
        config_dirs: directories to look for ``.torchxconfig`` in (default: the runner's).
        **kwargs: other ``argparse.Action`` arguments.
    """

    _subcmd_configs: dict[str, dict[str, str]] = {}
    _subcmd_where: dict[str, tuple[Any, ...]] = {}

    def __init__(
        self,
        subcmd: str,
        dest: str,
        option_strings: Sequence[str],
        required: bool = False,
        default: Any = None,
        config_dirs: Optional[Iterable[str]] = None,
        **kwargs: Any,
    ) -> None:
        configs = self._configs(subcmd, config_dirs)
        if dest in configs:
            default = configs[dest]
            logger.debug("using `%s = %s` from [cli:%s] of .torchxconfig", dest, default, subcmd)
            required = False
        super().__init__(
            dest=dest,
            option_strings=option_strings,
            required=required,
            default=default,
            **kwargs,
        )

    @classmethod
    def _configs(cls, subcmd: str, config_dirs: Optional[Iterable[str]]) -> dict[str, str]:
        """Returns the ``[cli:{subcmd}]`` section, read once per sub-command.

        TorchX's cache (``_subcmd_configs.clear()`` empties it); it is re-read when the config
        location (``$TORCHXCONFIG``, the cwd, the directories) changed.
        """
        from torchx.runner import (  # lazy: runner.config ~1 ms: only if a torchxconfig action runs
            config,
        )

        dirs = list(config_dirs) if config_dirs is not None else None
        where = (
            os.environ.get(ENV_TORCHXCONFIG),
            os.getcwd(),
            dirs,
            list(config.DEFAULT_CONFIG_DIRS),
        )
        if subcmd not in cls._subcmd_configs or cls._subcmd_where.get(subcmd) != where:
            cls._subcmd_configs[subcmd] = config.get_configs(prefix="cli", name=subcmd, dirs=dirs)
            cls._subcmd_where[subcmd] = where
        return cls._subcmd_configs[subcmd]

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: Optional[str] = None,
    ) -> None:
        """Stores ``values``; exits 1 if the option was already given (as TorchX)."""
        _check_once(self, namespace, option_string)
        setattr(namespace, self.dest, values)


class torchxconfig_run(torchxconfig):
    """:class:`torchxconfig` reading the ``[cli:run]`` section."""

    def __init__(self, dest: str, option_strings: Sequence[str], **kwargs: Any) -> None:
        super().__init__("run", dest, option_strings, **kwargs)


class torchxconfig_list(torchxconfig):
    """:class:`torchxconfig` reading the ``[cli:list]`` section."""

    def __init__(self, dest: str, option_strings: Sequence[str], **kwargs: Any) -> None:
        super().__init__("list", dest, option_strings, **kwargs)
