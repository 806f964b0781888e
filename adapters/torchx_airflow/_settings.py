"""What a ``torchx`` connection (or the hook's arguments) says about where and how to run apps.

Pure Python, no Airflow import: the hook reads the connection's extras into a
:class:`TorchXSettings`, and the operator and trigger ask it for the scheduler, the run
config, component defaults and tracker variables.

Connection extras (JSON)::

    {
      "scheduler": "local_cwd",
      "scheduler_cfg": {"log_dir": "/tmp/logs"},      # or "log_dir=/tmp/logs,..."
      "scheduler_params": {"cache_size": 100},        # keyword args of the scheduler factory
      "torchxconfig": "[component:dist.ddp]  j = 1x2 ..."  # the text of a .torchxconfig
    }

``torchxconfig`` is the text of a ``.torchxconfig`` file. Its ``[<scheduler>]`` section fills
run options that neither the operator nor ``scheduler_cfg`` set, ``[component:<name>]``
sections give component defaults, and ``[torchx:tracker]`` / ``[tracker:<name>]`` sections
configure trackers for the launched apps. ``[named_resources]`` is read only from real
``.torchxconfig`` files on the worker (see the README).
"""

from __future__ import annotations

import configparser
import dataclasses
import difflib
import io
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from torchx.runner.api import Runner

__all__ = ["DEFAULT_SCHEDULER", "EXTRA_KEYS", "TorchXSettings"]

DEFAULT_SCHEDULER = "local_cwd"
EXTRA_KEYS = ("scheduler", "scheduler_cfg", "scheduler_params", "torchxconfig")


def _check_extras(extras: Mapping[str, Any], conn_id: str) -> None:
    for key in extras:
        if key in EXTRA_KEYS or key.startswith("extra__"):
            continue
        close = difflib.get_close_matches(key, EXTRA_KEYS, n=1)
        hint = f"did you mean `{close[0]}`? " if close else ""
        raise ValueError(
            f"connection `{conn_id}` has an unknown extra `{key}`: {hint}"
            f"valid extras are {', '.join(EXTRA_KEYS)}"
        )


def _ui_field(extras: Mapping[str, Any], key: str) -> Any:
    """Returns ``key`` or its UI-form spelling ``extra__torchx__{key}``."""
    value = extras.get(key)
    if value in (None, ""):
        value = extras.get(f"extra__torchx__{key}")
    return None if value == "" else value


def _parse_ini(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return parser


@dataclasses.dataclass(frozen=True)
class TorchXSettings:
    """Scheduler, run config and ``.torchxconfig`` text for launching TorchX apps.

    Args:
        scheduler: the scheduler name, or None for ``[cli:run] scheduler`` / ``local_cwd``.
        scheduler_cfg: run options as a dict, or a ``k=v,k2=v2`` string.
        scheduler_params: keyword arguments for the scheduler factories.
        torchxconfig: the text of a ``.torchxconfig`` file ("" for none).
    """

    scheduler: Optional[str] = None
    scheduler_cfg: Any = None
    scheduler_params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    torchxconfig: str = ""

    @classmethod
    def from_extras(cls, extras: Mapping[str, Any], conn_id: str = "") -> TorchXSettings:
        """Reads a connection's extras.

        Args:
            extras: the decoded JSON extras.
            conn_id: the connection id, for error messages.

        Raises:
            ValueError: an unknown key (with a close-match suggestion) or a bad value type.
        """
        _check_extras(extras, conn_id)
        params = _ui_field(extras, "scheduler_params") or {}
        if not isinstance(params, Mapping):
            raise ValueError(
                f"connection `{conn_id}`: `scheduler_params` must be a JSON object, got {params!r}"
            )
        return cls(
            scheduler=_ui_field(extras, "scheduler"),
            scheduler_cfg=_ui_field(extras, "scheduler_cfg"),
            scheduler_params=dict(params),
            torchxconfig=_ui_field(extras, "torchxconfig") or "",
        )

    def override(
        self,
        scheduler: Optional[str] = None,
        scheduler_cfg: Any = None,
        scheduler_params: Optional[Mapping[str, Any]] = None,
        torchxconfig: Optional[str] = None,
    ) -> TorchXSettings:
        """Returns a copy where each non-empty argument replaces (cfg/params: updates) a value."""
        return TorchXSettings(
            scheduler=scheduler or self.scheduler,
            scheduler_cfg=_merge_cfg(self.scheduler_cfg, scheduler_cfg),
            scheduler_params={**self.scheduler_params, **(scheduler_params or {})},
            torchxconfig=self.torchxconfig if torchxconfig is None else torchxconfig,
        )

    def resolve_scheduler(self) -> str:
        """Returns the scheduler: explicit, else ``[cli:run] scheduler``, else ``local_cwd``."""
        if self.scheduler:
            return self.scheduler
        if self.torchxconfig:
            parser = _parse_ini(self.torchxconfig)
            if parser.has_option("cli:run", "scheduler"):
                return parser.get("cli:run", "scheduler")
        return DEFAULT_SCHEDULER

    def run_cfg(self, runner: Runner, scheduler: str) -> dict[str, Any]:
        """Returns the run config: ``scheduler_cfg`` first, then the ``[scheduler]`` section.

        Args:
            runner: used to parse a string ``scheduler_cfg`` with the scheduler's runopts.
            scheduler: the scheduler name.
        """
        cfg = _cfg_dict(runner, scheduler, self.scheduler_cfg)
        if self.torchxconfig:
            from torchx.runner import config

            config.load(scheduler, io.StringIO(self.torchxconfig), cfg)
        return cfg

    def component_defaults(self) -> dict[str, dict[str, str]]:
        """Returns ``{component: {param: value}}`` from the ``[component:<name>]`` sections."""
        return self._sections("component")

    def tracker_env(self) -> dict[str, str]:
        """Returns ``TORCHX_TRACKERS`` and ``TORCHX_TRACKER_<NAME>_CONFIG`` for the apps."""
        if not self.torchxconfig:
            return {}
        parser = _parse_ini(self.torchxconfig)
        if not parser.has_section("torchx:tracker"):
            return {}
        from torchx.settings import ENV_TORCHX_TRACKERS
        from torchx.tracker.api import tracker_config_env_var_name

        names = list(parser.options("torchx:tracker"))
        env = {ENV_TORCHX_TRACKERS: ",".join(names)} if names else {}
        for name in names:
            section = f"tracker:{name}"
            if parser.has_option(section, "config"):
                env[tracker_config_env_var_name(name)] = parser.get(section, "config")
        return env

    def _sections(self, prefix: str) -> dict[str, dict[str, str]]:
        if not self.torchxconfig:
            return {}
        parser = _parse_ini(self.torchxconfig)
        found: dict[str, dict[str, str]] = {}
        for section in parser.sections():
            head, delim, name = section.partition(":")
            if delim and head == prefix and name:
                found[name] = dict(parser.items(section))
        return found


def _merge_cfg(base: Any, top: Any) -> Any:
    if not top:
        return base
    if isinstance(base, Mapping) and isinstance(top, Mapping):
        return {**base, **top}
    return top


def _cfg_dict(runner: Runner, scheduler: str, cfg: Any) -> dict[str, Any]:
    if not cfg:
        return {}
    if isinstance(cfg, str):
        return dict(runner.cfg_from_str(scheduler, cfg))
    if isinstance(cfg, Mapping):
        return dict(cfg)
    raise ValueError(
        f"scheduler_cfg must be a dict or a `k=v,k2=v2` string, got {type(cfg).__name__}: {cfg!r}"
    )
