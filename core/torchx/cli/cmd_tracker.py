"""``torchx tracker``: read what the configured tracker recorded (jobs, metadata, lineage)."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Sequence
from typing import Optional

from tabulate import tabulate

from torchx.cli.cmd_base import SubCommand
from torchx.tracker.api import Lineage, TrackerBase, build_trackers

__all__ = ["CmdTracker", "SubCommand", "TrackerBase", "build_trackers", "get_configured_trackers"]

DOCS_URL = "https://meta-pytorch.org/torchx/latest/runtime/tracking.html"


def get_configured_trackers() -> dict[str, Optional[str]]:
    """Returns ``torchx.runner.api.get_configured_trackers()`` (looked up at call time)."""
    from torchx.runner import api  # lazy: looked up at call time (patched in tests)

    return api.get_configured_trackers()


def _table(rows: Sequence[Sequence[object]], headers: Sequence[str]) -> str:

    return tabulate(rows, headers=list(headers))


def _print_json(data: object) -> None:
    print(json.dumps(data, indent=2, sort_keys=True, default=str))


def _lineage_tables(lineage: Lineage) -> str:
    edges = [(e.parent, e.child, e.artifact_name or "") for e in lineage.edges]
    relation = {r: "ancestor" for r in lineage.ancestors}
    relation.update({r: "descendant" for r in lineage.descendants})
    relation[lineage.run_id] = "self"
    runs = [lineage.run_id, *lineage.ancestors, *lineage.descendants]
    artifacts = [
        (relation[run], run, name, art.path)
        for run in runs
        for name, art in lineage.artifacts.get(run, {}).items()
    ]
    parts = [
        f"Lineage of {lineage.run_id}: {len(lineage.ancestors)} ancestor(s),"
        f" {len(lineage.descendants)} descendant(s)",
        _table(edges, ["PARENT RUN", "CHILD RUN", "ARTIFACT"]) if edges else "(no links)",
    ]
    if artifacts:
        parts.append(_table(artifacts, ["RELATION", "RUN", "ARTIFACT", "PATH"]))
    return "\n\n".join(parts)


class CmdTracker(SubCommand):
    """Lists jobs, metadata, artifacts and lineage recorded by the first configured tracker."""

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        """Adds ``list jobs|metadata|artifacts|lineage`` and ``lineage``."""
        subparser.add_argument("--json", action="store_true", help="print JSON instead of tables")
        commands = subparser.add_subparsers(dest="tracker_cmd", metavar="{list,lineage}")
        commands.required = True
        list_parser = commands.add_parser("list", help="list what the tracker recorded")
        what = list_parser.add_subparsers(
            dest="list_what", metavar="{jobs,metadata,artifacts,lineage}"
        )
        what.required = True
        jobs = what.add_parser("jobs", help="tracked run ids")
        jobs.add_argument("--parent-run-id", "--parent_run_id", dest="parent_run_id", default=None)
        what.add_parser("metadata", help="metadata of a run").add_argument("run_id")
        arts = what.add_parser("artifacts", help="artifacts of a run")
        arts.add_argument("--artifact", default=None, help="only this artifact")
        arts.add_argument("run_id")
        what.add_parser("lineage", help="same as `torchx tracker lineage`").add_argument(
            "run_id", nargs="?", default=None
        )
        commands.add_parser("lineage", help="parents and descendants of a run").add_argument(
            "run_id", nargs="?", default=None
        )
        for p in (list_parser, *what.choices.values(), commands.choices["lineage"]):
            p.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
        # as TorchX: each subcommand sets ``args.func`` (``args.func(args)`` runs it)
        for name, p in what.choices.items():
            p.set_defaults(func=functools.partial(self._dispatch, name, p))
        lineage = commands.choices["lineage"]
        lineage.set_defaults(func=functools.partial(self._dispatch, "lineage", lineage))

    @property
    def tracker(self) -> TrackerBase:
        """The first tracker configured in ``.torchxconfig`` or ``TORCHX_TRACKERS``."""
        configured = get_configured_trackers()
        trackers = build_trackers(configured) if configured else []
        if not trackers:
            if configured:
                raise RuntimeError(
                    f"none of the configured trackers ({', '.join(configured)}) could be built;"
                    " check the names and their configs"
                )
            raise RuntimeError(f"No trackers configured. See: {DOCS_URL}")
        return trackers[0]

    def run(self, args: argparse.Namespace) -> None:
        """Runs the selected tracker query and prints a table (or JSON with ``--json``)."""
        args.func(args)

    def _dispatch(
        self, what: str, parser: argparse.ArgumentParser, args: argparse.Namespace
    ) -> None:
        if what == "lineage" and not args.run_id:
            parser.error("lineage needs the RUN_ID of the run to trace")
        if not hasattr(args, "json"):
            args.json = False
        getattr(self, f"_{what}")(self.tracker, args)
        sys.stdout.flush()

    def _jobs(self, tracker: TrackerBase, args: argparse.Namespace) -> None:
        kwargs = {"parent_run_id": args.parent_run_id} if args.parent_run_id else {}
        runs = list(tracker.run_ids(**kwargs))
        if args.json:
            _print_json(runs)
        else:
            print(_table([[r] for r in runs], ["JOB ID"]))

    def _metadata(self, tracker: TrackerBase, args: argparse.Namespace) -> None:
        meta = dict(tracker.metadata(args.run_id))
        if args.json:
            _print_json(meta)
        else:
            print(_table(sorted(meta.items()), ["ID", "VALUE"]))

    def _artifacts(self, tracker: TrackerBase, args: argparse.Namespace) -> None:
        arts = {
            name: art
            for name, art in tracker.artifacts(args.run_id).items()
            if args.artifact is None or name == args.artifact
        }
        if args.json:
            _print_json({n: {"path": a.path, "metadata": a.metadata} for n, a in arts.items()})
        else:
            rows = [(n, a.path, json.dumps(dict(a.metadata or {}))) for n, a in arts.items()]
            print(_table(rows, ["ARTIFACT", "PATH", "METADATA"]))

    def _lineage(self, tracker: TrackerBase, args: argparse.Namespace) -> None:
        lineage = tracker.lineage(args.run_id)
        if args.json:
            _print_json(lineage.to_json())
        else:
            print(_lineage_tables(lineage))
