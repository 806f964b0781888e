"""Arguments of ``torchx run``: :class:`TorchXRunArgs` and how to build it (private).

Re-exported from :mod:`torchx.cli.cmd_run`, where TorchX users import these names.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from torchx.cli._errors import CliError
from torchx.specs.api import Workspace

__all__ = [
    "TorchXRunArgs",
    "_check_workspace",
    "_parse_component_name_and_args",
    "startup_seconds",
    "torchx_run_args_from_argparse",
    "torchx_run_args_from_json",
]

_OPTION = re.compile(r"^--?[A-Za-z_]")


@dataclass
class TorchXRunArgs:
    """Everything ``torchx run`` needs, from the command line or from ``--stdin`` JSON.

    ``scheduler_args`` is the JSON form of the run options (read with
    ``runopts.cfg_from_json_repr``); ``scheduler_cfg`` is the parsed form and wins when
    non-empty. ``workspace`` ``""`` means the current directory and None means no workspace.
    ``component_args_str`` (CLI-style arguments) is used when non-empty, otherwise
    ``component_args`` (``{param: value}``). ``startup_timeout`` (seconds the app may take to
    start, see :mod:`torchx.runner.follow`) makes ``torchx run`` wait.
    """

    component_name: str
    scheduler: str
    scheduler_args: dict[str, Any]
    scheduler_cfg: dict[str, Any] = field(default_factory=dict)
    dryrun: bool = False
    wait: bool = False
    log: bool = False
    workspace: Optional[str] = ""
    parent_run_id: Optional[str] = None
    tee_logs: bool = False
    component_args: dict[str, Any] = field(default_factory=dict)
    component_args_str: list[str] = field(default_factory=list)
    startup_timeout: Optional[float] = None


_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "component_name": (str,),
    "scheduler": (str,),
    "scheduler_args": (dict,),
    "scheduler_cfg": (dict,),
    "dryrun": (bool,),
    "wait": (bool,),
    "log": (bool,),
    "workspace": (str, type(None)),
    "parent_run_id": (str, type(None)),
    "tee_logs": (bool,),
    "component_args": (dict,),
    "component_args_str": (list,),
    "startup_timeout": (int, float, type(None)),
}


def torchx_run_args_from_json(json_data: dict[str, Any]) -> TorchXRunArgs:
    """Builds :class:`TorchXRunArgs` from the ``torchx run --stdin`` JSON object.

    Args:
        json_data: the decoded JSON object.

    Raises:
        ValueError: a required field is missing, a field is not a run argument, or a field
            has the wrong JSON type.
    """
    all_fields = [f.name for f in dataclasses.fields(TorchXRunArgs)]
    required = [
        f.name
        for f in dataclasses.fields(TorchXRunArgs)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    missing = [name for name in required if name not in json_data]
    if missing:
        raise ValueError(f"The following required fields are missing: {', '.join(missing)}")
    extra = sorted(set(json_data) - set(all_fields))
    if extra:
        raise ValueError(
            f"The following fields are not part of the run command: {', '.join(extra)}.",
            f"Please check your JSON and try launching again (fields: {', '.join(all_fields)}).",
        )
    for name, value in json_data.items():
        types = _FIELD_TYPES[name]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            expected = " or ".join(dict.fromkeys(_json_type(t) for t in types))
            raise ValueError(f"field `{name}` of the run command must be {expected}, got {value!r}")
    timeout = json_data.get("startup_timeout")
    if timeout is not None and timeout < 0:
        raise ValueError(f"field `startup_timeout` must be >= 0 seconds, got {timeout!r}")
    run_args = TorchXRunArgs(**json_data)
    if run_args.workspace == "":  # as TorchX: the default workspace is the current directory
        run_args.workspace = os.getcwd()
    return run_args


def _json_type(tp: type) -> str:
    names = {str: "a string", dict: "an object", bool: "a boolean", list: "an array"}
    names.update({int: "a number", float: "a number"})
    return names.get(tp, "null")


def torchx_run_args_from_argparse(
    args: argparse.Namespace,
    component_name: str,
    component_args: list[str],
    scheduler_cfg: dict[str, Any],
) -> TorchXRunArgs:
    """Builds :class:`TorchXRunArgs` from the parsed ``torchx run`` command line.

    Args:
        args: the parsed ``torchx run`` arguments.
        component_name: the component (from :func:`_parse_component_name_and_args`).
        component_args: the component's CLI-style arguments.
        scheduler_cfg: the parsed ``-cfg`` run options.
    """
    return TorchXRunArgs(
        component_name=component_name,
        scheduler=args.scheduler,
        scheduler_args={},
        scheduler_cfg=scheduler_cfg,
        dryrun=args.dryrun,
        wait=args.wait,
        log=args.log,
        workspace=args.workspace or None,
        parent_run_id=args.parent_run_id,
        tee_logs=args.tee_logs,
        component_args_str=component_args,
        startup_timeout=getattr(args, "startup_timeout", None),
    )


def startup_seconds(text: str) -> float:
    """``--startup_timeout``'s type: seconds >= 0.

    Raises:
        argparse.ArgumentTypeError: not a number, or negative (argparse prints it, exit 2).
    """
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        raise argparse.ArgumentTypeError(f"expected seconds >= 0 (e.g. 300), got {text!r}")
    return seconds


def _check_workspace(workspace: Optional[str]) -> None:
    """Checks that every local project of ``--workspace`` exists.

    Args:
        workspace: the workspace string (a path, or a YAML ``{src: dst}`` mapping); None or
            empty means no workspace. URLs (``scheme://...``) are not checked.

    Raises:
        CliError: a local project does not exist (exit code 1, nothing is launched).
    """
    if not workspace:
        return
    for src in Workspace.from_str(workspace).projects:
        if "://" in src or os.path.exists(src):
            continue
        parent = os.path.dirname(os.path.abspath(src))
        siblings = os.listdir(parent) if os.path.isdir(parent) else []
        import difflib  # only for the error  # lazy: only for the error (difflib ~2 ms)

        close = difflib.get_close_matches(os.path.basename(src), siblings, n=1)
        hint = f" Did you mean `{os.path.join(parent, close[0])}`?" if close else ""
        raise CliError(
            f"workspace `{src}` does not exist.{hint} Pass an existing directory with"
            " --workspace, or --workspace '' to run without a workspace"
        )


def _repeated_options(args: list[str]) -> list[str]:
    repeated: list[str] = []
    group: set[str] = set()
    for arg in args:
        if arg == "--":
            group = set()
            continue
        if not _OPTION.match(arg):
            continue
        name = arg.partition("=")[0]
        if name in group and name not in repeated:
            repeated.append(name)
        group.add(name)
    return repeated


def _parse_component_name_and_args(
    component_name_and_args: list[str],
    subparser: argparse.ArgumentParser,
    dirs: Optional[list[str]] = None,
) -> tuple[str, list[str]]:
    """Splits ``torchx run``'s remainder into the component name and its arguments.

    A leading ``--`` is dropped. When the first token is an option (starts with ``-``) every
    token is a component argument and the component comes from ``[cli:run] component`` of
    ``.torchxconfig``.

    Args:
        component_name_and_args: the tokens after the run options.
        subparser: the ``torchx run`` parser (for usage errors, exit code 2).
        dirs: directories to look for ``.torchxconfig`` in (default: the runner's).

    Returns:
        ``(component_name, component_args)``.
    """
    from torchx.runner import config  # lazy: after the spare supervisor's prestart

    tokens = list(component_name_and_args)
    if tokens and tokens[0] == "--":
        tokens = tokens[1:]
    repeated = _repeated_options(tokens)
    if repeated:
        subparser.error(f"Repeated Command Line Arguments: {repeated}")
    if not tokens or tokens[0].startswith("-"):
        component = config.get_config(prefix="cli", name="run", key="component", dirs=dirs)
        if not component:
            subparser.error(
                "missing component name, either provide it from the CLI or in .torchxconfig"
            )
        return component, tokens
    return tokens[0], tokens[1:]
