"""``torchx pipeline``: validate, dry-run and run multi-step pipelines locally.

``torchx pipeline run FILE [-p NAME=VALUE ...] [--continue-on-failure] [--resume [RUN_ID]]
[--json]`` runs the steps of a pipeline file (``pipelines/pipeline.yaml``) through the Runner,
independent steps in parallel, and exits 0 only if every step succeeded. ``dryrun`` prints
each step's AppDef and scheduler request; ``status RUN_ID`` and ``list`` read runs from disk.
On SIGINT/SIGTERM every running step is cancelled before ``torchx`` exits (130 or 143).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, Optional

from torchx.cli._errors import CliError
from torchx.cli._signals import acknowledge, exit_code_for, signal_exception_types
from torchx.cli.cmd_base import SubCommand

if TYPE_CHECKING:
    from torchx.workflow import Pipeline
    from torchx.workflow.run import PipelineRun

__all__ = ["CmdPipeline"]


def _param(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got `{text}`")
    return key.strip(), value


def _load(path: str) -> Pipeline:
    try:
        from torchx.workflow import (  # lazy: pydantic is optional (its ImportError -> CliError)
            load_pipeline,
        )
    except ImportError as e:
        raise CliError(
            f"`torchx pipeline` needs pydantic ({e}); pip install 'torchx-flow[workflow]'"
        ) from e
    return load_pipeline(path)


class CmdPipeline(SubCommand):
    """Runs, dry-runs and inspects multi-step pipelines."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        """Adds ``run``, ``dryrun``, ``status`` and ``list``."""
        cmds = subparser.add_subparsers(dest="pipeline_cmd", metavar="{run,dryrun,status,list}")
        cmds.required = True
        run = cmds.add_parser("run", help="run a pipeline file locally")
        dry = cmds.add_parser("dryrun", help="validate a pipeline file and print every request")
        for p in (run, dry):
            p.add_argument("file", help="the pipeline file (YAML)")
            p.add_argument(
                "-p",
                "--param",
                dest="params",
                action="append",
                type=_param,
                default=[],
                metavar="NAME=VALUE",
                help="set a pipeline parameter",
            )
        run.add_argument(
            "--continue-on-failure",
            action="store_true",
            help="keep running the steps that do not depend on a failed one",
        )
        run.add_argument(
            "--resume",
            nargs="?",
            const="latest",
            default=None,
            metavar="RUN_ID",
            help="continue a previous run (default: the latest of this pipeline)",
        )
        run.add_argument("--json", action="store_true", help="print JSON lines for scripts")
        run.add_argument("--wait-interval", type=float, default=5.0, help=argparse.SUPPRESS)
        status = cmds.add_parser("status", help="print a run's steps")
        status.add_argument("run_id")
        status.add_argument("--json", action="store_true", help="print JSON")
        cmds.add_parser("list", help="list pipeline runs, newest first").add_argument(
            "--json", action="store_true", help="print JSON"
        )

    def run(self, args: argparse.Namespace) -> None:
        """Runs the selected pipeline command."""
        getattr(self, f"_{args.pipeline_cmd}")(args)

    def _dryrun(self, args: argparse.Namespace) -> None:
        from torchx.workflow.executor import (  # lazy: needs pydantic (optional): see _load
            dryrun_pipeline,
        )

        pipeline = _load(args.file)
        for name, info in dryrun_pipeline(pipeline, dict(args.params)):
            print(f"=== step {name} ({info._scheduler}) ===")
            print(info)
        print(f"pipeline {pipeline.name}: {len(pipeline.steps)} steps valid")

    def _run(self, args: argparse.Namespace) -> None:
        from torchx.workflow.executor import (  # lazy: needs pydantic (optional): see _load
            run_pipeline,
        )
        from torchx.workflow.progress import (  # lazy: needs pydantic (optional): see _load
            make_progress,
        )

        pipeline = _load(args.file)
        resume = _resume_id(args.resume, pipeline.name)
        progress = make_progress(args.json)
        state: dict[str, Any] = {}

        def on_change(run: PipelineRun, step: Any) -> None:
            if "run" not in state:
                state["run"] = run
                progress.start(run)
            progress(run, step)

        try:
            run = run_pipeline(
                pipeline,
                dict(args.params),
                fail_fast=not args.continue_on_failure,
                resume=resume,
                on_change=on_change,
                wait_interval=args.wait_interval,
            )
        except signal_exception_types() as e:
            acknowledge()
            progress.stop()
            if "run" in state:
                _report(state["run"], args.json)
            sys.exit(exit_code_for(e))
        if "run" not in state:
            progress.start(run)
        progress.stop()
        _report(run, args.json)
        if run.state != "SUCCEEDED":
            sys.exit(1)

    def _status(self, args: argparse.Namespace) -> None:
        from torchx.workflow.progress import (  # lazy: needs pydantic (optional): see _load
            PlainProgress,
        )
        from torchx.workflow.run import PipelineRun  # lazy: needs pydantic (optional): see _load

        run = PipelineRun.load(args.run_id)
        if args.json:
            print(json.dumps(run.to_dict(), indent=2, default=str))
            return
        plain = PlainProgress(sys.stdout)
        for step in run.steps.values():
            plain(run, step)
        print(run.summary())

    def _list(self, args: argparse.Namespace) -> None:
        from torchx.workflow.run import list_runs  # lazy: needs pydantic (optional): see _load

        runs = list_runs()
        if args.json:
            print(json.dumps([r.to_dict() for r in runs], indent=2, default=str))
            return
        for r in runs:
            print(f"{r.run_id:<40} {r.state:<10} {r.source or r.pipeline}")


def _resume_id(resume: Optional[str], pipeline: str) -> Optional[str]:
    if resume != "latest":
        return resume
    from torchx.workflow.run import list_runs  # lazy: needs pydantic (optional): see _load

    runs = list_runs(pipeline)
    if not runs:
        raise CliError(f"no previous run of pipeline `{pipeline}` to resume; run it first")
    return runs[0].run_id


def _report(run: PipelineRun, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"event": "end", **run.to_dict()}, default=str), flush=True)
        return
    for step in run.steps.values():
        if step.state == "FAILED" and step.app_handle:
            print(
                f"step {step.name} failed; its logs: torchx log {step.app_handle}", file=sys.stderr
            )
    print(run.summary(), flush=True)
