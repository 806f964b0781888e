"""Entry point of the ``torchx`` command (``torchx = torchx.cli.main:main``).

Sub-commands come from :func:`get_default_sub_cmds` plus the ``torchx.cli.cmds`` entry-point
group (``name = module:SubCommandClass``; a plugin with a builtin's name replaces it).

Startup is lazy: ``torchx --help`` imports only ``argparse`` and this package, and not even
``argparse`` when the text argparse printed before is still valid (``_help_cache``). Builtin
commands are imported when selected, and their arguments are added only when that command is
parsed. ``torchx --help``, ``torchx builtins`` and ``torchx runopts [NAME]`` are answered from
the one start-up cache (``_startup_cache``) while nothing they depend on changed.

Errors: a user mistake prints ``torchx: error: <one line>`` on stderr and exits 1 (argparse
usage errors exit 2); the traceback is shown only with ``--log_level DEBUG``. A SIGINT or
SIGTERM exits with ``128 + signal number`` (130 or 143) after ``torchx run`` has cancelled
its app.
"""

from __future__ import annotations

import os
import sys

from torchx.cli import _help_cache, _startup_cache
from torchx.version import __version__

# an answer served from the start-up cache (``_startup_cache``) imports this module and the two
# caches only: argparse, ``_lazy`` and ``cmd_base`` are imported where they are used
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping, Sequence
    from typing import Any

    from torchx.cli.cmd_base import SubCommand

__all__ = [
    "create_parser",
    "get_default_sub_cmds",
    "get_sub_cmds",
    "load_group",
    "main",
    "run_main",
    "sub_parser_description",
]

sub_parser_description = """Use the following commands to run operations, e.g.:
torchx run ${JOB_NAME}
"""
"""Description of the sub-command group in ``torchx --help``."""

CMDS_GROUP = "torchx.cli.cmds"

# name -> ("module:Class", one-line help). Adding a builtin command is one line here.
_DEFAULT_SUB_CMDS: dict[str, tuple[str, str]] = {
    "builtins": ("torchx.cli.cmd_builtins:CmdBuiltins", "Lists the builtin components"),
    "cancel": ("torchx.cli.cmd_cancel:CmdCancel", "Cancels a running app"),
    "configure": ("torchx.cli.cmd_configure:CmdConfigure", "Writes a .torchxconfig file"),
    "delete": ("torchx.cli.cmd_delete:CmdDelete", "Deletes an app from its scheduler"),
    "describe": ("torchx.cli.cmd_describe:CmdDescribe", "Describes an app (its AppDef)"),
    "list": ("torchx.cli.cmd_list:CmdList", "Lists the apps of a scheduler"),
    "pipeline": ("torchx.cli.cmd_pipeline:CmdPipeline", "Runs multi-step pipelines locally"),
    "log": ("torchx.cli.cmd_log:CmdLog", "Prints or tails the logs of an app"),
    "run": ("torchx.cli.cmd_run:CmdRun", "Runs a component on a scheduler"),
    "runopts": ("torchx.cli.cmd_runopts:CmdRunopts", "Lists the run options of schedulers"),
    "status": ("torchx.cli.cmd_status:CmdStatus", "Prints the status of an app"),
    "tracker": ("torchx.cli.cmd_tracker:CmdTracker", "Reads what the configured tracker recorded"),
}


def load_group(group: str, default: Any = None, skip_defaults: bool = False) -> Any:
    """Returns ``torchx.util.entrypoints.load_group(group, default, skip_defaults)``.

    When no installed distribution declares ``group`` it returns ``default`` without
    importing ``importlib.metadata`` (see ``group_may_have_entry_points``).

    Args:
        group: the entry-point group.
        default: returned when the group is empty.
        skip_defaults: return None instead of ``default`` for an empty group.
    """
    from torchx.util import entrypoints  # lazy: ~2 ms; the cached answers never load a group

    if not entrypoints.group_may_have_entry_points(group):
        return None if skip_defaults else default
    return entrypoints.load_group(group, default=default, skip_defaults=skip_defaults)


def get_default_sub_cmds() -> dict[str, SubCommand]:
    """Returns the builtin sub-commands by name.

    Each value is a ``SubCommand`` that imports its module on first use (``.load()`` returns
    the real command object).
    """
    from torchx.cli._lazy import LazySubCommand  # lazy: argparse, ~4 ms

    return {name: LazySubCommand(ref, help) for name, (ref, help) in _DEFAULT_SUB_CMDS.items()}


def get_sub_cmds() -> dict[str, SubCommand]:
    """Returns the builtin sub-commands merged with the ``torchx.cli.cmds`` plugins.

    Raises:
        RuntimeError: a plugin command cannot be imported or instantiated.
        TypeError: a plugin entry point does not give a ``SubCommand``.
    """
    from torchx.cli.cmd_base import SubCommand  # lazy: argparse, ~4 ms

    subcmds = get_default_sub_cmds()
    plugins: Mapping[str, Any] | None = load_group(CMDS_GROUP, default=None)
    for name, factory in (plugins or {}).items():
        try:
            cmd = factory()
        except Exception as e:
            raise RuntimeError(
                f"cannot load the `{name}` command of entry-point group `{CMDS_GROUP}`:"
                f" {type(e).__name__}: {e}; fix or uninstall the plugin that declares it"
            ) from e
        if not isinstance(cmd, SubCommand):
            raise TypeError(
                f"entry point `{name}` of group `{CMDS_GROUP}` gives a"
                f" `{type(cmd).__name__}`, not a torchx.cli.cmd_base.SubCommand subclass;"
                " fix or uninstall the plugin that declares it"
            )
        subcmds[name] = cmd
    return subcmds


def _help_of(cmd: SubCommand) -> str | None:
    help = getattr(cmd, "help", None)
    if isinstance(help, str):
        return help
    doc = type(cmd).__doc__
    return doc.strip().splitlines()[0] if doc and doc.strip() else None


def _log_level(value: str) -> str:
    names = ("CRITICAL", "FATAL", "ERROR", "WARN", "WARNING", "INFO", "DEBUG", "NOTSET")
    if value.isdigit() or value.upper() in names:
        return value.upper()
    import argparse  # lazy: ~4 ms, not on the cached answers

    raise argparse.ArgumentTypeError(
        f"invalid log level `{value}`; use one of {', '.join(names)} or a number"
    )


def create_parser(subcmds: Mapping[str, SubCommand]) -> argparse.ArgumentParser:
    """Creates the ``torchx`` parser with the global flags and one sub-parser per command.

    A sub-command's ``add_arguments`` runs only when that sub-command is parsed.

    Args:
        subcmds: the sub-commands by name.
    """
    import argparse  # lazy: ~4 ms, not on the cached answers

    from torchx.cli._lazy import HelpFormatter, LazySubParsersAction  # lazy: argparse, ~4 ms

    parser = argparse.ArgumentParser(
        prog="torchx", description="torchx CLI", formatter_class=HelpFormatter
    )
    parser.add_argument(
        "--log_level",
        type=_log_level,
        default=os.environ.get("LOGLEVEL", "INFO"),
        help="Python logging log level (default: $LOGLEVEL or INFO)",
    )
    parser.add_argument("--version", action="version", version=f"torchx-{__version__}")
    subparsers = parser.add_subparsers(
        title="sub-commands",
        description=sub_parser_description,
        action=LazySubParsersAction,
        metavar="{" + ",".join(subcmds) + "}",
    )
    assert isinstance(subparsers, LazySubParsersAction)
    for name, cmd in subcmds.items():
        subparsers.add_command(name, cmd, _help_of(cmd))
    return parser


def _configure_logging(level: str) -> None:
    from torchx.cli import _logging  # lazy: the cached answers never log

    _logging.configure(level)  # when ``logging`` is first imported: listings never log


def run_main(subcmds: Mapping[str, SubCommand], argv: Sequence[str] | None = None) -> None:
    """Parses ``argv`` and runs the selected sub-command.

    Known errors print ``torchx: error: <message>`` and exit 1 (see the module docstring).

    Args:
        subcmds: the sub-commands by name.
        argv: the arguments (default ``sys.argv[1:]``).
    """
    from torchx.cli._handler import handle_errors  # lazy: signal enums, ~3 ms

    argv = list(sys.argv[1:] if argv is None else argv)
    with handle_errors(argv):
        parser = create_parser(subcmds)
        args = parser.parse_args(argv)
        _configure_logging(args.log_level)
        if "func" not in args:
            parser.print_help()
            sys.exit(1)
        args.func(args)


def main(argv: Sequence[str] | None = None) -> None:
    """The ``torchx`` console script: installs the signal handlers, then :func:`run_main`.

    ``--help``, ``builtins`` and ``runopts [NAME]`` are answered from the start-up cache
    (:mod:`torchx.cli._startup_cache`) when it is valid, before anything else is imported.

    Args:
        argv: the arguments (default ``sys.argv[1:]``).
    """
    console = argv is None and _is_console_script()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not console:
        _answer(argv)
        return
    try:  # the cached answers too: their teardown was ~2 ms of a 15 ms start
        _answer(argv)
    except SystemExit as e:
        _exit_now(e.code)
    _exit_now(0)


def _answer(argv: list[str]) -> None:
    """The cached answer when it is valid (it exits), else :func:`_main`."""
    _help_cache.print_cached_help(argv)  # these two exit when the stored answer is valid
    _startup_cache.serve(argv)
    _main(argv)


def _main(argv: list[str]) -> None:
    """:func:`main` past the start-up cache."""
    if argv[:1] == ["run"]:
        from torchx.cli import _gc  # lazy: torchx run only

        _gc.pause()  # resumed once the app is submitted (CmdRun)
    from torchx.cli._handler import handle_errors  # lazy: signal enums, ~3 ms
    from torchx.cli._signals import install_signal_handlers  # lazy: signal enums, ~3 ms

    install_signal_handlers()
    with handle_errors(argv):
        subcmds = get_sub_cmds()
    only_builtins = _only_builtins(subcmds)
    _startup_cache.enable_store(only_builtins)
    if argv in _help_cache.HELP_ARGS and only_builtins:
        _help_cache.store_help(create_parser(subcmds).format_help())
    section = _startup_cache.output_section(argv) if only_builtins else None
    if section is None:
        run_main(subcmds, argv)
        return
    with _startup_cache.recording(section):
        run_main(subcmds, argv)


def _is_console_script() -> bool:
    """Whether this process is the ``torchx`` console script (its ``__main__`` is that file).

    Not when :func:`main` is called by other Python code (``runpy``, a test, a program that
    catches the ``SystemExit``): only the script's process may end without returning.
    """
    path = getattr(sys.modules.get("__main__"), "__file__", None) or ""
    return os.path.basename(path) == "torchx"


def _exit_now(code: object) -> None:
    """Ends the ``torchx`` process with ``code`` (a ``SystemExit`` code) without the teardown.

    The interpreter's teardown (freeing every module a ``torchx run`` imported, ~200) costs
    ~10 ms of a ~110 ms ``torchx run -s local_cwd utils.sh echo hi`` (bench_launch, load 1.5),
    and ~2 ms of a cached ``torchx --help`` or ``builtins`` (~16 ms at load 6, 41 rounds):
    the ``atexit`` handlers run (logging's flush among them), the standard streams are flushed,
    then ``os._exit``. Returns (the caller exits as usual) while a non-daemon thread still
    runs, which the teardown would have waited for.
    """
    threading = sys.modules.get("threading")
    if threading is not None and any(
        t.is_alive() and not t.daemon and t is not threading.main_thread()
        for t in threading.enumerate()
    ):
        raise SystemExit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # as the interpreter does with ``sys.exit("message")``
        print(code, file=sys.stderr)
        status = 1
    import atexit  # lazy: on the exit path only (a builtin module: no file read, ~0.02 ms)

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (``| head``): as the interpreter's 120
            status = status or 120
    os._exit(status)


def _only_builtins(subcmds: Mapping[str, SubCommand]) -> bool:
    """Whether ``subcmds`` are exactly the builtin commands (no ``torchx.cli.cmds`` plugin)."""
    from torchx.cli._lazy import LazySubCommand  # lazy: argparse, ~4 ms

    return list(subcmds) == list(_DEFAULT_SUB_CMDS) and all(
        type(cmd) is LazySubCommand for cmd in subcmds.values()
    )


if __name__ == "__main__":
    main()
