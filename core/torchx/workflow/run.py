"""The record of a pipeline run: ``PipelineRun`` and its ``StepRun`` s, kept on disk.

A run lives in ``$TORCHX_HOME/pipelines/<run id>/state.json`` (written atomically after every
change), so ``torchx pipeline run FILE --resume RUN_ID`` continues it: steps that succeeded are
kept with their outputs, the others run again.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from torchx.specs.api import TORCHX_HOME

__all__ = ["DONE_STATES", "PipelineRun", "StepRun", "list_runs", "runs_dir"]

DONE_STATES = ("SUCCEEDED", "FAILED", "CANCELLED", "SKIPPED")


def runs_dir() -> Path:
    """Returns ``$TORCHX_HOME/pipelines`` (created if missing)."""
    return TORCHX_HOME("pipelines")


@dataclass
class StepRun:
    """One step of a run.

    Attributes:
        name: the step.
        state: PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED or SKIPPED (an upstream step
            did not succeed, or the run stopped first).
        app_handle: the TorchX app handle (also its tracker run id).
        app_id: the app id.
        parent_run_id: the tracker parent (the parent step's run), "" for a root step.
        outputs: the declared output paths, rendered.
        started: when it was launched (epoch seconds, 0 if never).
        ended: when it ended (0 while running).
        msg: why it failed or was skipped.
        reused: kept from the run this one resumed.
    """

    name: str
    state: str = "PENDING"
    app_handle: str = ""
    app_id: str = ""
    parent_run_id: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    started: float = 0.0
    ended: float = 0.0
    msg: str = ""
    reused: bool = False

    def results(self) -> dict[str, str]:
        """Returns what downstream steps may reference: ``{field: value}``."""
        values = {
            "app_handle": self.app_handle,
            "app_id": self.app_id,
            "tracker_run_id": self.app_handle,
            "state": self.state,
        }
        values.update({f"outputs.{k}": v for k, v in self.outputs.items()})
        return values

    @property
    def duration(self) -> float:
        """Seconds between launch and end (or now), 0 if never launched."""
        if not self.started:
            return 0.0
        return (self.ended or time.time()) - self.started


@dataclass
class PipelineRun:
    """A run of a pipeline.

    Attributes:
        run_id: ``<pipeline>-<random>``.
        pipeline: the pipeline name.
        source: the pipeline file ("" for Python pipelines).
        params: the parameter values.
        steps: ``{step: StepRun}`` in run order.
        state: RUNNING, SUCCEEDED, FAILED or CANCELLED.
        started: epoch seconds.
        ended: epoch seconds (0 while running).
    """

    run_id: str
    pipeline: str
    source: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    steps: dict[str, StepRun] = field(default_factory=dict)
    state: str = "RUNNING"
    started: float = field(default_factory=time.time)
    ended: float = 0.0

    @property
    def path(self) -> Path:
        """The state file."""
        return runs_dir() / self.run_id / "state.json"

    def save(self) -> None:
        """Writes the state file atomically."""
        path = self.path
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".state.")
        with os.fdopen(fd, "w") as f:
            json.dump(self.to_dict(), f, indent=2)
        os.replace(tmp, path)

    def to_dict(self) -> dict[str, Any]:
        """Returns the run as JSON-ready data."""
        return dataclasses.asdict(self)

    @classmethod
    def load(cls, run_id: str) -> PipelineRun:
        """Reads run ``run_id`` from disk.

        Args:
            run_id: the run id printed by ``torchx pipeline run``.

        Raises:
            LookupError: no such run (the message lists the recent ones).
        """
        path = runs_dir() / run_id / "state.json"
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            known = [r.run_id for r in list_runs()[:5]]
            hint = f"; recent runs: {', '.join(known)}" if known else ""
            raise LookupError(f"no pipeline run `{run_id}` in {runs_dir()}{hint}") from None
        steps = {k: StepRun(**v) for k, v in data.pop("steps").items()}
        return cls(**data, steps=steps)

    def summary(self) -> str:
        """One line: pipeline, state, steps and their states, time, run id, outputs."""
        states = ", ".join(f"{s.name} {s.state}" for s in self.steps.values())
        took = (self.ended or time.time()) - self.started
        outs = [f"{s.name}.{k}={v}" for s in self.steps.values() for k, v in s.outputs.items()]
        tail = f"; outputs: {', '.join(outs)}" if outs else ""
        return (
            f"pipeline {self.pipeline} {self.state}: {len(self.steps)} steps ({states})"
            f" in {took:.1f}s; run id {self.run_id}{tail}"
        )


def list_runs(pipeline: Optional[str] = None) -> list[PipelineRun]:
    """Returns the runs on disk, newest first (of ``pipeline`` only, when given).

    Args:
        pipeline: a pipeline name.
    """
    runs = []
    for state in runs_dir().glob("*/state.json"):
        try:
            run = PipelineRun.load(state.parent.name)
        except (LookupError, ValueError, TypeError):
            continue
        if pipeline is None or run.pipeline == pipeline:
            runs.append(run)
    return sorted(runs, key=lambda r: r.started, reverse=True)
