"""App labels of ``slurm`` jobs, kept in the job's comment (``sbatch --comment``).

A Slurm job has no labels, but it has a free-text comment that ``squeue`` shows, ``scontrol
update`` changes while the job is known to the controller, and accounting keeps (with
``AccountingStoreFlags=job_comment``; ``sacctmgr modify job`` changes it afterwards). The labels
go at its end as one word, after the user's own comment (the ``comment`` run option)::

    <user comment> torchx-labels:task=train,run=manual__2025-01-01T00-00-00-1a2b3c4d

Keys (without :data:`~torchx.schedulers.labels.LABEL_PREFIX`) and values are label-safe
(``[A-Za-z0-9_.-]``), so neither ``,`` nor ``=`` nor a space can occur in them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from torchx.schedulers._slurm._describe import _int, _split_job_id
from torchx.schedulers._slurm._states import appstate_from_slurm_state, get_appstate_from_job
from torchx.schedulers.labels import LABEL_PREFIX, LabelledApp
from torchx.specs.api import is_terminal

__all__ = [
    "COMMENT_TAG",
    "comment_labels",
    "comment_with_labels",
    "merge_labelled",
    "sacct_labelled",
    "squeue_labelled",
    "user_comment",
]

COMMENT_TAG = "torchx-labels:"
"""Starts the word of a job comment that holds the app's labels."""

_SAFE = r"[A-Za-z0-9_.-]"
_WORD = re.compile(rf"(?:^|\s){COMMENT_TAG}((?:{_SAFE}+={_SAFE}*)(?:,{_SAFE}+={_SAFE}*)*)\s*$")


def comment_labels(comment: Optional[str]) -> dict[str, str]:
    """The labels a job comment holds (full keys, ``LABEL_PREFIX`` included; {} if none)."""
    match = _WORD.search(comment or "")
    if match is None:
        return {}
    pairs = (item.split("=", 1) for item in match.group(1).split(","))
    return {LABEL_PREFIX + k: v for k, v in pairs}


def user_comment(comment: Optional[str]) -> str:
    """The comment without its labels word (what the user gave as the ``comment`` option)."""
    text = comment or ""
    match = _WORD.search(text)
    return text[: match.start()].rstrip() if match else text


def comment_with_labels(comment: Optional[str], labels: Mapping[str, str]) -> Optional[str]:
    """Returns ``comment`` with ``labels`` (full keys) merged over the labels it holds.

    Args:
        comment: the current comment (or the ``comment`` run option at submit).
        labels: label entries; keys without ``LABEL_PREFIX`` are not labels and are skipped.

    Returns:
        The new comment; ``comment`` unchanged (None stays None) when there are no labels.
    """
    merged = {**comment_labels(comment), **_label_entries(labels.items())}
    if not merged:
        return comment
    word = COMMENT_TAG + ",".join(f"{k.removeprefix(LABEL_PREFIX)}={v}" for k, v in merged.items())
    head = user_comment(comment)
    return f"{head} {word}" if head else word


def _label_entries(items: Iterable[tuple[str, object]]) -> dict[str, str]:
    return {k: str(v) for k, v in items if k.startswith(LABEL_PREFIX)}


def squeue_labelled(jobs: Iterable[Mapping[str, Any]]) -> dict[str, LabelledApp]:
    """``squeue --json`` jobs -> ``{job id: LabelledApp}`` (a heterogeneous job's leader only)."""
    out: dict[str, LabelledApp] = {}
    for job in jobs:
        job_id, het = _int(job.get("job_id")), _int(job.get("het_job_id"))
        if het and het != job_id:
            continue
        labels = comment_labels(str(job.get("comment", "") or ""))
        out[str(job_id)] = LabelledApp(str(job_id), get_appstate_from_job(job), labels)
    return out


def sacct_labelled(lines: Iterable[str]) -> dict[str, LabelledApp]:
    """``sacct -X --parsable2 --noheader --format=JobID,State,Comment`` -> ``{job id: app}``."""
    out: dict[str, LabelledApp] = {}
    for line in lines:
        cols = line.rstrip("\n").split("|")
        if len(cols) < 3:
            continue
        leader, offset, step = _split_job_id(cols[0])
        if step is None and offset == 0 and leader.isdigit():
            labels = comment_labels("|".join(cols[2:]))
            out[leader] = LabelledApp(leader, appstate_from_slurm_state(cols[1]), labels)
    return out


def merge_labelled(
    done: Mapping[str, LabelledApp], live: Mapping[str, LabelledApp]
) -> list[LabelledApp]:
    """Accounting's apps updated by ``squeue``'s (fresher), in job id order.

    A job that ended may still show in ``squeue`` with its comment from before it ended;
    labels added afterwards are only in accounting, so they are merged over ``squeue``'s.
    """
    apps = dict(done)
    for job_id, app in live.items():
        old = done.get(job_id)
        if old is not None and is_terminal(app.state):
            app = LabelledApp(job_id, app.state, {**app.labels, **old.labels})
        apps[job_id] = app
    return [apps[k] for k in sorted(apps, key=int)]
