"""Progress displays: a live table redrawn in place on a terminal, plain lines otherwise."""

from __future__ import annotations

import io

import pytest

pytest.importorskip("pydantic", reason="pydantic is not installed (pip install -e '.[workflow]')")

from torchx.workflow.progress import JsonProgress, LiveProgress, PlainProgress, make_progress
from torchx.workflow.run import PipelineRun, StepRun


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run() -> PipelineRun:
    return PipelineRun("r-1", "p", steps={"a": StepRun("a"), "b": StepRun("b")})


def test_terminal_gets_a_table_redrawn_in_place() -> None:
    out = Tty()
    progress = make_progress(False, out)
    assert isinstance(progress, LiveProgress)
    run = _run()
    progress.start(run)
    run.steps["a"].state, run.steps["a"].app_handle = "RUNNING", "local_cwd://torchx/a-1"
    progress(run, run.steps["a"])
    progress.stop()
    text = out.getvalue()
    assert "\x1b[2F" in text  # cursor back over the two step lines, then redraw
    assert text.count("\x1b[2K") >= 4
    assert "local_cwd://torchx/a-1" in text.rsplit("\x1b[2F", 1)[1]


def test_pipe_gets_plain_lines_and_json_on_request() -> None:
    out = io.StringIO()
    progress = make_progress(False, out)
    assert type(progress) is PlainProgress
    run = _run()
    run.steps["b"].state, run.steps["b"].msg = "SKIPPED", "upstream step `a` did not succeed"
    progress(run, run.steps["b"])
    assert "\x1b" not in out.getvalue()
    assert out.getvalue().split()[:2] == ["b", "SKIPPED"]
    assert isinstance(make_progress(True, out), JsonProgress)
