"""Response types and log-line helpers of the scheduler API (re-exported by ``schedulers.api``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional

from torchx.specs.api import NONE, AppState, Role, RoleStatus

__all__ = [
    "DescribeAppResponse",
    "ListAppResponse",
    "Stream",
    "filter_regex",
    "split_lines",
    "split_lines_iterator",
]


class Stream(str, Enum):  # noqa: UP042 (TorchX str() of members)
    """Which log stream of a replica to read."""

    STDOUT = "stdout"
    STDERR = "stderr"
    COMBINED = "combined"


@dataclass
class DescribeAppResponse:
    """What a scheduler knows about one app (``Scheduler.describe``).

    ``num_restarts=-1`` means the scheduler does not track restarts.
    """

    app_id: str = "<NOT_SET>"
    state: AppState = AppState.UNSUBMITTED
    num_restarts: int = -1
    msg: str = NONE
    structured_error_msg: str = NONE
    ui_url: Optional[str] = None
    metadata: dict[str, Any] = field(default_factory=dict)
    roles_statuses: list[RoleStatus] = field(default_factory=list)
    roles: list[Role] = field(default_factory=list)


@dataclass
class ListAppResponse:
    """One entry of ``Scheduler.list``; hashable on ``(app_id, app_handle, state)``."""

    app_id: str
    state: AppState
    app_handle: str = "<NOT_SET>"
    name: str = ""

    def __hash__(self) -> int:
        return hash((self.app_id, self.app_handle, self.state))


def filter_regex(regex: str, lines: Iterable[str]) -> Iterator[str]:
    """Yield only the lines in which ``regex`` matches (``re.search``).

    Args:
        regex: the pattern.
        lines: the lines to filter.

    Returns:
        An iterator over the matching lines, unchanged.
    """
    pattern = re.compile(regex)
    return (line for line in lines if pattern.search(line))


def split_lines(text: str) -> list[str]:
    """Split ``text`` into lines, keeping each line's trailing newline.

    Args:
        text: the text to split.

    Returns:
        The lines; the last one has no newline if ``text`` does not end with one.
    """
    return _split_on_newline(text)


def _split_on_newline(text: str) -> list[str]:
    lines: list[str] = []
    start = 0
    while (end := text.find("\n", start)) != -1:
        lines.append(text[start : end + 1])
        start = end + 1
    if start < len(text):
        lines.append(text[start:])
    return lines


def split_lines_iterator(chunks: Iterable[str]) -> Iterator[str]:
    """Re-chunk a stream of text pieces into whole lines (each keeping its newline).

    Args:
        chunks: text pieces that may split or join lines arbitrarily.

    Yields:
        Whole lines; a trailing partial line is yielded at the end.
    """
    buffer = ""
    for chunk in chunks:
        buffer += chunk
        *complete, buffer = _split_keep_tail(buffer)
        yield from complete
    if buffer:
        yield buffer


def _split_keep_tail(text: str) -> list[str]:
    """Split into lines; the last element is the (possibly empty) unfinished tail."""
    parts = _split_on_newline(text)
    if not parts or parts[-1].endswith("\n"):
        parts.append("")
    return parts
