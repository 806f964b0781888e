"""Progress displays for pipeline runs: live table on a terminal, plain lines, JSON lines."""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, Optional, TextIO

from torchx.workflow.run import PipelineRun, StepRun

__all__ = ["JsonProgress", "LiveProgress", "PlainProgress", "make_progress"]


def _line(step: StepRun) -> str:
    took = f"{step.duration:6.1f}s" if step.started else " " * 7
    detail = step.app_handle or ""
    if step.state in ("FAILED", "SKIPPED", "CANCELLED") and step.msg:
        detail = f"{detail} {step.msg}".strip()
    if step.reused:
        detail = f"{detail} (kept from the resumed run)"
    return f"{step.name:<20} {step.state:<10} {took}  {detail}"


class PlainProgress:
    """One line per step state change (for logs and pipes).

    Args:
        out: where to write.
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def start(self, run: PipelineRun) -> None:
        """Prints the run id and its steps."""
        print(
            f"pipeline {run.pipeline}: run {run.run_id}, steps {', '.join(run.steps)}",
            file=self.out,
            flush=True,
        )
        for step in run.steps.values():
            if step.reused:
                self(run, step)

    def __call__(self, run: PipelineRun, step: StepRun) -> None:
        """Prints the step's new state."""
        print(_line(step).rstrip(), file=self.out, flush=True)

    def stop(self) -> None:
        """Nothing to clean up."""


class JsonProgress(PlainProgress):
    """One JSON object per step state change (``{"event": "step", ...}``)."""

    def start(self, run: PipelineRun) -> None:
        """Prints the run's start event."""
        self._emit(
            {
                "event": "start",
                "run_id": run.run_id,
                "pipeline": run.pipeline,
                "steps": list(run.steps),
                "params": run.params,
            }
        )

    def __call__(self, run: PipelineRun, step: StepRun) -> None:
        """Prints the step's new state as JSON."""
        data = {"event": "step", "run_id": run.run_id, **step.__dict__}
        self._emit(data)

    def _emit(self, data: dict[str, Any]) -> None:
        print(json.dumps(data, default=str), file=self.out, flush=True)


class LiveProgress(PlainProgress):
    """A table of the steps redrawn in place on a terminal, elapsed times ticking."""

    def __init__(self, out: TextIO) -> None:
        super().__init__(out)
        self._run: Optional[PipelineRun] = None
        self._drawn = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: Optional[threading.Thread] = None

    def start(self, run: PipelineRun) -> None:
        """Draws the table and starts the ticker."""
        print(f"pipeline {run.pipeline}: run {run.run_id}", file=self.out, flush=True)
        self._run = run
        self._draw()
        self._ticker = threading.Thread(target=self._tick, name="pipeline-progress", daemon=True)
        self._ticker.start()

    def __call__(self, run: PipelineRun, step: StepRun) -> None:
        """Redraws the table."""
        self._run = run
        self._draw()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            self._draw()

    def _draw(self) -> None:
        with self._lock:
            if self._run is None:
                return
            lines = [_line(s) for s in list(self._run.steps.values())]
            up = f"\x1b[{self._drawn}F" if self._drawn else ""
            body = "".join(f"\x1b[2K{line}\n" for line in lines)
            self.out.write(up + body)
            self.out.flush()
            self._drawn = len(lines)

    def stop(self) -> None:
        """Stops the ticker and draws the final table."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2)
        self._draw()


def make_progress(json_lines: bool, out: Optional[TextIO] = None) -> PlainProgress:
    """Returns the JSON, live (terminal) or plain display.

    Args:
        json_lines: JSON lines for scripts.
        out: the stream (default stdout).
    """
    out = out or sys.stdout
    if json_lines:
        return JsonProgress(out)
    if out.isatty():
        return LiveProgress(out)
    return PlainProgress(out)
