"""``torchx run``: materialize a component and run it (or dry-run it) on a scheduler.

``torchx run [-s SCHEDULER] [-cfg k=v,...] [--dryrun] [--wait] [--log] COMPONENT ARGS...``
prints the app handle on stdout. On ``local*`` schedulers it then always waits, streaming
the logs (``{role}/{replica} `` prefixes) to stderr, and exits 1 unless the app SUCCEEDED;
with the local run option ``detach=True`` it returns at once unless ``--wait``/``--log``.
Other schedulers wait only with ``--wait`` (``--log`` also streams the logs; ``--tee_logs``
is accepted as an alias of ``--log``). On SIGINT/SIGTERM while waiting it cancels the app and
exits with ``128 + signal number`` (130 or 143).

Waiting is :mod:`torchx.runner.follow`: an app that fails ends the output with its reason,
its status and the last lines of each failed replica. ``--startup_timeout SECONDS`` (implies
``--wait``) cancels an app that has not started by then (e.g. a Kubernetes pod stuck in
``ImagePullBackOff`` or unschedulable) and says why, with the scheduler's reason.

``--stdin`` reads the whole run configuration as JSON (see :class:`TorchXRunArgs`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Optional, Union

from torchx.cli import _gc
from torchx.cli._errors import CliError, exception_message
from torchx.cli._run_args import (
    TorchXRunArgs,
    _check_workspace,
    _parse_component_name_and_args,
    startup_seconds,
    torchx_run_args_from_argparse,
    torchx_run_args_from_json,
)
from torchx.cli._schedulers import add_scheduler_argument, scheduler_names
from torchx.cli._signals import acknowledge, exit_code_for, signal_exception_types
from torchx.cli.argparse_util import ArgOnceAction, torchxconfig_run
from torchx.cli.cmd_base import SubCommand
from torchx.cli.cmd_builtins import CmdBuiltins
from torchx.schedulers import get_default_scheduler_name

if TYPE_CHECKING:
    from torchx.runner import Runner
    from torchx.specs.api import AppDryRunInfo

__all__ = [
    "LOCAL_SCHEDULER_WARNING_MSG",
    "MISSING_COMPONENT_ERROR_MSG",
    "CmdBuiltins",
    "CmdRun",
    "TorchXRunArgs",
    "_parse_component_name_and_args",
    "get_runner",
    "torchx_run_args_from_argparse",
    "torchx_run_args_from_json",
]

logger: logging.Logger = logging.getLogger(__name__)

LOCAL_SCHEDULER_WARNING_MSG = "`local` scheduler is deprecated, use `local_cwd` instead"
"""Logged when ``-s local`` is used."""

MISSING_COMPONENT_ERROR_MSG = (
    "missing component name, either provide it from the CLI or in .torchxconfig"
)
"""The usage error when neither the command line nor ``[cli:run]`` names a component."""

_STDIN_COMPATIBLE = {"help", "stdin", "dryrun"}


def get_runner(*args: Any, **kwargs: Any) -> Runner:
    """Returns ``torchx.runner.get_runner(*args, **kwargs)`` (looked up at call time)."""
    from torchx.runner import (  # lazy: looked up at call time (patched in tests)
        get_runner as _get_runner,
    )

    return _get_runner(*args, **kwargs)


class CmdRun(SubCommand):
    """Runs a component on a scheduler."""

    def __init__(self) -> None:
        self._subparser: Optional[argparse.ArgumentParser] = None

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        """Adds the ``torchx run`` flags and the component remainder."""
        self._subparser = subparser
        names = scheduler_names()
        add_scheduler_argument(
            subparser,
            "-s",
            "--scheduler",
            names=names,
            action=torchxconfig_run,
            default=get_default_scheduler_name(),
            help="name of the scheduler to use",
        )
        subparser.add_argument(
            "-cfg",
            "--scheduler_args",
            type=str,
            action=ArgOnceAction,
            default=None,
            help="comma-separated run options for the scheduler, e.g. -cfg k1=v1,k2=v2"
            " (see `torchx runopts`)",
        )
        subparser.add_argument(
            "--dryrun",
            action="store_true",
            default=False,
            help="print the app and the scheduler request instead of submitting",
        )
        subparser.add_argument(
            "--wait", action="store_true", default=False, help="wait for the app to finish"
        )
        subparser.add_argument(
            "--log",
            action="store_true",
            default=False,
            help="stream the app's logs to stderr while waiting (implies --wait)",
        )
        subparser.add_argument(
            "--startup_timeout",
            type=startup_seconds,
            action=ArgOnceAction,
            default=None,
            metavar="SECONDS",
            help="cancel the app if it has not started after SECONDS (e.g. an image that cannot"
            " be pulled, no node with room for it) and say why; implies --wait",
        )
        subparser.add_argument(
            "--workspace",
            "--buck-target",
            type=str,
            action=torchxconfig_run,
            default=os.getcwd(),
            help="local project to build into the image (schedulers with workspace support)",
        )
        subparser.add_argument(
            "--parent_run_id",
            type=str,
            action=ArgOnceAction,
            default=None,
            help="tracker run id of the parent run",
        )
        subparser.add_argument(
            "--tee_logs",
            action="store_true",
            default=False,
            help="stream the app's logs, prefixed with {role}/{replica}, while waiting",
        )
        subparser.add_argument(
            "--stdin",
            action="store_true",
            default=False,
            help="read the run configuration as a JSON object from stdin",
        )
        subparser.add_argument(
            "component_name_and_args",
            nargs=argparse.REMAINDER,
            help="component name (e.g. utils.echo or path/file.py:fn) and its arguments",
        )

    def run(self, args: argparse.Namespace) -> None:
        """Runs (or dry-runs) the component; see the module docstring."""
        # torchx.specs.TORCHX_CONTEXT_NAME, named here: importing it costs the specs (~8 ms)
        # before the spare supervisor starts; set first, as the spare copies the environment
        os.environ.setdefault("TORCHX_CONTEXT_NAME", "cli_run")
        with _supervisor_started_early(args):
            from torchx.runner.config import (  # lazy: after the spare supervisor's prestart
                load_sections,
            )

            if args.stdin:
                run_args = self._run_args_from_stdin(args)
            else:
                component, component_args = _parse_component_name_and_args(
                    args.component_name_and_args, self._parser()
                )
                run_args = torchx_run_args_from_argparse(args, component, component_args, {})
            component_defaults = load_sections(prefix="component")
            with get_runner(component_defaults=component_defaults) as runner:
                if not args.stdin:
                    opts = runner.scheduler_run_opts(run_args.scheduler)
                    run_args.scheduler_cfg = opts.cfg_from_str(args.scheduler_args or "")
                self._run(runner, run_args, from_stdin=bool(args.stdin))

    def _parser(self) -> argparse.ArgumentParser:
        if self._subparser is None:
            self._subparser = argparse.ArgumentParser(prog="torchx run")
            self.add_arguments(self._subparser)
        return self._subparser

    def verify_no_extra_args(self, args: argparse.Namespace) -> None:
        """With ``--stdin``, exits with a usage error (2) if anything but ``--dryrun`` is given.

        The JSON holds the whole configuration, the component included.

        Args:
            args: the parsed ``torchx run`` arguments.
        """
        if not args.stdin:
            return
        parser = self._parser()
        conflicts = [
            action.option_strings[-1] if action.option_strings else "the component (positional)"
            for action in parser._actions
            if action.dest not in _STDIN_COMPATIBLE
            and getattr(args, action.dest, action.default) not in (action.default, [])
        ]
        if conflicts:
            parser.error(
                f"Cannot specify {', '.join(conflicts)} when using --stdin."
                " All configuration should be provided in JSON input."
            )

    def torchx_json_from_stdin(self, args: Optional[argparse.Namespace] = None) -> dict[str, Any]:
        """Reads the ``--stdin`` JSON object; with ``args.dryrun`` sets ``"dryrun": true``.

        Exits (code 1, one ``torchx: error:`` line) when stdin is not a JSON object.
        """
        try:
            return _stdin_json(args)
        except CliError as e:
            print(f"torchx: error: {e}", file=sys.stderr)
            raise SystemExit(e.exit_code) from e

    def _run_args_from_stdin(self, args: argparse.Namespace) -> TorchXRunArgs:
        self.verify_no_extra_args(args)
        run_args = torchx_run_args_from_json(_stdin_json(args))
        run_args.dryrun = run_args.dryrun or args.dryrun
        return run_args

    def _run(self, runner: Runner, run_args: TorchXRunArgs, from_stdin: bool = False) -> None:
        from torchx.runner import config  # lazy: after the spare supervisor's prestart
        from torchx.specs.api import (  # lazy: after the spare supervisor's prestart
            InvalidRunConfigException,
        )
        from torchx.specs.finder import (  # lazy: after the spare supervisor's prestart
            ComponentNotFoundException,
            ComponentValidationException,
        )

        scheduler = run_args.scheduler
        if scheduler == "local":
            logger.warning(LOCAL_SCHEDULER_WARNING_MSG)
        cfg = dict(run_args.scheduler_cfg)
        if not cfg and run_args.scheduler_args:
            opts = runner.scheduler_run_opts(scheduler)
            cfg = dict(opts.cfg_from_json_repr(json.dumps(run_args.scheduler_args)))
        config.apply(scheduler=scheduler, cfg=cfg)
        _check_workspace(os.getcwd() if run_args.workspace == "" else run_args.workspace)
        try:
            if run_args.dryrun:
                self._dryrun(runner, run_args, cfg)
            else:
                self._launch(runner, run_args, cfg)
        except (ComponentNotFoundException, ComponentValidationException) as e:
            raise CliError(
                f"Failed to run component `{run_args.component_name}` got errors: "
                f"{exception_message(e)}"
            ) from e
        except InvalidRunConfigException as e:
            where = (
                '`"scheduler_args": {"key1": value1, ...}` of the JSON input'
                if from_stdin
                else "`-cfg key1=value1,key2=value2`"
            )
            raise CliError(
                f"Invalid scheduler configuration: {exception_message(e)}. Set run options"
                f" with {where} or in the [{scheduler}] section of .torchxconfig;"
                f" `torchx runopts {scheduler}` lists them"
            ) from e

    def _call_args(self, run_args: TorchXRunArgs, cfg: dict[str, Any]) -> dict[str, Any]:
        component_args: Union[list[str], dict[str, Any]] = (
            run_args.component_args_str
            if run_args.component_args_str
            else dict(run_args.component_args)
        )
        workspace = run_args.workspace
        return {
            "component": run_args.component_name,
            "component_args": component_args,
            "scheduler": run_args.scheduler,
            "cfg": cfg,
            "workspace": os.getcwd() if workspace == "" else workspace,
            "parent_run_id": run_args.parent_run_id,
        }

    def _dryrun(self, runner: Runner, run_args: TorchXRunArgs, cfg: dict[str, Any]) -> None:
        from pprint import pformat  # lazy: --dryrun only (pprint ~1 ms)

        info: AppDryRunInfo[Any] = runner.dryrun_component(**self._call_args(run_args, cfg))
        app = info._app
        print("\n=== APPLICATION ===")
        print(pformat(asdict(app) if app is not None else None, indent=2, width=80))
        print("\n=== SCHEDULER REQUEST ===")
        print(info)

    def _launch(self, runner: Runner, run_args: TorchXRunArgs, cfg: dict[str, Any]) -> None:
        app_handle = runner.run_component(**self._call_args(run_args, cfg))
        _gc.resume()  # paused by main() for the start only
        print(app_handle, flush=True)
        log = run_args.log or run_args.tee_logs
        startup = run_args.startup_timeout
        local = run_args.scheduler.startswith("local") and not cfg.get("detach")
        if not (local or run_args.wait or log or startup is not None):
            self._report(runner, app_handle)
            return
        try:  # from here a signal cancels the app: it is ours to wait for
            if not local:
                self._report(runner, app_handle)
            self._wait(runner, app_handle, log or local, startup)
        except signal_exception_types() as e:
            acknowledge()
            logger.warning("interrupted (%s); cancelling %s", exception_message(e), app_handle)
            runner.cancel(app_handle)
            sys.exit(exit_code_for(e))

    def _report(self, runner: Runner, app_handle: str) -> None:
        logger.info("Launched app: %s", app_handle)
        status = runner.status(app_handle)
        if status is not None:
            logger.info("AppStatus: %s", status.state)
            if status.ui_url:
                logger.info("Job URL: %s", status.ui_url)

    def _wait(
        self, runner: Runner, app_handle: str, log: bool, startup_timeout: Optional[float]
    ) -> None:
        from torchx.cli._run_follow import (  # lazy: follow layer ~2.5 ms, as the app starts
            follow_app,
        )

        result = follow_app(runner, app_handle, log, startup_timeout)
        if result.status is None:
            raise CliError(f"app `{app_handle}` disappeared before it finished")
        logger.info("Job finished: %s", result.status.state)
        if not result.succeeded:
            logger.error("%s", result.failure_message())
            sys.exit(1)


def _stdin_json(args: Optional[argparse.Namespace]) -> dict[str, Any]:
    try:
        data = json.load(sys.stdin)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CliError(
            "Unable to parse JSON input for `torchx run` command, please make sure it's"
            f" a valid JSON input. ({e})"
        ) from e
    if not isinstance(data, dict):
        raise CliError(
            "Invalid JSON input for `torchx run` command: expected a JSON object with the"
            f" run arguments, got {type(data).__name__}"
        )
    if args is not None and args.dryrun:
        data["dryrun"] = True
    return data


def _supervisor_started_early(args: argparse.Namespace) -> contextlib.AbstractContextManager[None]:
    """A local_cwd app's supervisor starts while the component loads (see ``local_scheduler``)."""
    if args.stdin or args.dryrun or args.scheduler != "local_cwd":
        return contextlib.nullcontext()
    from torchx.schedulers.local_prestart import (  # lazy: local_cwd only
        prestarted_supervisor,
    )

    return prestarted_supervisor()
