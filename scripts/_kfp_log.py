"""kfp.local runs that print summary lines, not pages of executor output.

Used by scripts/kfp_local_run.py and scripts/_pipeline_run.py. kfp.local writes each task's
executor input/output JSON, its streamed log and its outputs to stdout. :func:`output_to` sends
all of it (file descriptors 1 and 2, so child processes too) to a log file; :func:`summary_lines`
then reads back one line per task, and the end of the log when the run failed.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Optional

__all__ = ["output_to", "summary_lines", "task_names", "task_states"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_TASK = re.compile(r"Task '(?P<task>[^']+)' finished with status (?P<status>[A-Z]+)")


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[None]:
    """Sends this process's stdout and stderr (and its children's) to ``log`` (appended).

    File descriptors 1 and 2 point at the log (for child processes and C code), and so do
    ``sys.stdout``/``sys.stderr`` (line-buffered), even where they were not on those descriptors.

    Args:
        log: the log file (created with its directory if missing).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        with open(log, "ab") as out:
            os.dup2(out.fileno(), 1)
            os.dup2(out.fileno(), 2)
            text = open(1, "w", buffering=1, closefd=False, errors="replace")  # noqa: SIM115
            with text, contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
                yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


def task_states(log: Path) -> list[tuple[str, str]]:
    """``(task, status)`` of every "Task 'x' finished with status S" line kfp.local logged."""
    text = _ANSI.sub("", log.read_text(errors="replace")) if log.exists() else ""
    return [(m["task"], m["status"]) for m in _TASK.finditer(text)]


def task_names(component: Any) -> dict[str, str]:
    """The task keys kfp.local logs for ``component``'s root DAG -> their names (``taskInfo``)."""
    tasks = component.pipeline_spec.root.dag.tasks
    return {key: task.task_info.name for key, task in tasks.items()}


def summary_lines(
    log: Path, failed: bool, names: Optional[Mapping[str, str]] = None, tail: int = 20
) -> list[str]:
    """One line per finished task, then (when ``failed``) the last ``tail`` lines of ``log``.

    Args:
        log: the log :func:`output_to` wrote.
        failed: whether the run failed (adds the end of the log).
        names: display names of task keys (see :func:`task_names`).
        tail: how many lines of the log's end to add.
    """
    names = names or {}
    lines = [f"  task {names.get(task, task)}: {state}" for task, state in task_states(log)]
    if failed and log.exists():
        end = _ANSI.sub("", log.read_text(errors="replace")).rstrip().splitlines()[-tail:]
        lines += [f"  last {len(end)} lines of {log}:", *(f"    {line}" for line in end)]
    return lines
