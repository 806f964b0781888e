"""The per-replica log files: where they are and reading them (optionally following). Pure I/O.

``srun --output/--error`` writes ``slurm-{job id}-{role}-{replica}.out`` and ``.err`` in the job's
working directory. Reading both streams yields each file's lines as they come (a finished replica:
stdout's lines, then stderr's): the files carry no timestamps to interleave them by.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping

__all__ = ["SLURM_JOB_DIRS", "follow_files", "get_job_dirs", "save_job_dir"]

SLURM_JOB_DIRS = ".torchxslurmjobdirs"
"""TorchX's record of ``{job id} = {job_dir}`` in the launcher's directory. torchx-flow finds a
job's directory through ``squeue``/``sacct`` instead and only reads this file (for jobs TorchX
launched); :func:`save_job_dir` writes it for tools that want TorchX's record."""

_POLL = 0.1


def save_job_dir(job_id: str, job_dir: str) -> None:
    """Appends ``job_id = job_dir`` to :data:`SLURM_JOB_DIRS` in the current directory."""
    with open(SLURM_JOB_DIRS, "a", encoding="utf-8") as f:
        f.write(f"{job_id} = {job_dir}\n")


def get_job_dirs() -> Mapping[str, str]:
    """The recorded job dirs (empty when the file does not exist)."""
    try:
        with open(SLURM_JOB_DIRS, encoding="utf-8") as f:
            lines = f.readlines()
    except FileNotFoundError:
        return {}
    out = {}
    for line in lines:
        first, _, second = line.partition("=")
        if first.strip() and second.strip():
            out[first.strip()] = second.strip()
    return out


def _read_lines(f: object, partial: str) -> tuple[list[str], str]:
    data = f.read()  # type: ignore[attr-defined]
    if not data:
        return [], partial
    text = partial + data
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        return lines[:-1], lines[-1]
    return lines, ""


def follow_files(
    paths: list[str],
    is_done: Callable[[], bool],
    should_tail: bool,
    pause: Callable[[float], object] = time.sleep,
) -> Iterator[str]:
    """Yields the lines (keeping newlines) of ``paths``, in file order unless tailing.

    Waits for a file that does not exist yet until the app is done (a missing file then reads
    as empty: a replica that never started). Without ``should_tail`` each file is read to its
    end in turn; with it, all are followed together until ``is_done()``, then read to the end.

    Args:
        paths: the log files.
        is_done: returns whether the app has ended.
        should_tail: follow the files until the app ends.
        pause: sleeps between polls.
    """
    if not should_tail:
        for path in paths:
            yield from _follow(path, is_done, pause)
        return
    handles: dict[str, object] = {}
    partial = dict.fromkeys(paths, "")
    try:
        done = False
        while True:
            progressed = False
            for path in paths:
                if path not in handles and os.path.exists(path):
                    handles[path] = open(path, encoding="utf-8", errors="replace", newline="")  # noqa: SIM115
                if path in handles:
                    lines, partial[path] = _read_lines(handles[path], partial[path])
                    progressed = progressed or bool(lines)
                    yield from lines
            if done:
                break
            if not progressed:
                done = is_done()  # one more pass reads what was written before the end
                if not done:
                    pause(_POLL)
        for rest in partial.values():
            if rest:
                yield rest
    finally:
        for f in handles.values():
            f.close()  # type: ignore[attr-defined]


def _follow(
    path: str, is_done: Callable[[], bool], pause: Callable[[float], object]
) -> Iterator[str]:
    while not os.path.exists(path):
        if is_done():
            if not os.path.exists(path):
                return
            break
        pause(_POLL)
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        lines, rest = _read_lines(f, "")
        yield from lines
        if rest:
            yield rest
