"""Writing ``.torchxconfig`` files and scheduler run options, without the runner.

Public for code that needs only these (``torchx runopts``, ``runner.config``): importing it
imports neither ``logging`` nor the app types.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import configparser  # lazy: ~2 ms, only when a .torchxconfig is read
    import logging  # lazy: ~7 ms; torchx runopts never logs

    from torchx.specs.api import CfgVal, runopt, runopts

__all__ = [
    "ORCHESTRATOR_GROUP",
    "dump_scheduler_sections",
    "new_config_parser",
    "scheduler_run_opts",
]


def _logger() -> logging.Logger:
    """The ``torchx.runner.config`` logger (``logging`` imported on first use)."""
    import logging  # lazy: ~7 ms; torchx runopts never logs

    return logging.getLogger("torchx.runner.config")


ORCHESTRATOR_GROUP = "torchx.schedulers.orchestrator"
_FIXME_MAX_LEN = 60


def new_config_parser() -> configparser.ConfigParser:
    """Returns a ConfigParser with case-sensitive keys."""
    import configparser  # lazy: ~2 ms, only when a .torchxconfig is read

    config = configparser.ConfigParser()
    config.optionxform = str  # type: ignore[assignment, method-assign]
    return config


def _all_factories(factories: Mapping[str, Any]) -> dict[str, Any]:
    from torchx.util.entrypoints import load_group  # lazy: an orchestrator lookup only

    orchestrators = load_group(ORCHESTRATOR_GROUP, default={}) or {}
    return {**factories, **orchestrators}


def scheduler_run_opts(name: str, factories: Mapping[str, Any]) -> runopts:
    """Instantiates scheduler ``name`` (session ``"_"``) and returns its run options.

    Args:
        name: the scheduler name.
        factories: the registered scheduler factories (the orchestrator group is added).

    Raises:
        ValueError: ``name`` is neither a registered nor an orchestrator scheduler.
    """
    candidates = _all_factories(factories)
    if name not in candidates:
        import difflib  # lazy: only for the error (difflib ~2 ms)

        close = difflib.get_close_matches(name, list(candidates), n=1)
        hint = f" Did you mean `{close[0]}`?" if close else ""
        raise ValueError(
            f"`{name}` is not a registered scheduler. Valid scheduler names:"
            f" {list(candidates)}.{hint}"
        )
    factory = candidates[name]
    static = getattr(factory, "static_run_opts", None)  # builtins: without the scheduler
    opts: runopts | None = static() if static is not None else None
    if opts is None:
        opts = factory(session_name="_").run_opts()
    return opts


def _is_empty(value: CfgVal) -> bool:
    return value is None or (isinstance(value, (str, list, dict)) and len(value) == 0)


def _format_value(opt: runopt) -> str:
    default = opt.default
    if _is_empty(default):
        return "None"
    if isinstance(default, list):
        return ";".join(str(v) for v in default)
    if isinstance(default, dict):
        return ";".join(f"{k}:{v}" for k, v in default.items())
    return str(default)


def _fixme(opt: runopt) -> str:
    from torchx.specs.api import get_type_name  # lazy: the specs ~6 ms, --help of runopts

    text = f"#FIXME:({get_type_name(opt.opt_type)}) {opt.help}"
    if len(text) > _FIXME_MAX_LEN:
        text = text[:_FIXME_MAX_LEN] + "..."
    return text


def _section_values(opts: runopts, required_only: bool) -> list[tuple[str, str]]:
    values = []
    for name, opt in opts:
        if opt.is_required:
            values.append((name, _fixme(opt)))
        elif not required_only:
            values.append((name, _format_value(opt)))
    return values


def dump_scheduler_sections(
    f: IO[str], names: Iterable[str], factories: Mapping[str, Any], required_only: bool
) -> None:
    """Writes one ``[scheduler]`` section per name (see :func:`torchx.runner.config.dump`).

    Args:
        f: the file to write to.
        names: the scheduler names.
        factories: the registered scheduler factories.
        required_only: write only the required options.
    """
    config = new_config_parser()
    for name in names:
        try:
            opts = scheduler_run_opts(name, factories)
        except ImportError as e:
            _logger().warning(
                "skipping scheduler `%s`: its module cannot be imported (%s)", name, e
            )
            continue
        config.add_section(name)
        for key, value in _section_values(opts, required_only):
            config.set(name, key, value.replace("%", "%%"))
    config.write(f, space_around_delimiters=True)
