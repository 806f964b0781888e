"""The machine's speed and load printed at the end of a run (tests/_machine.py)."""

from __future__ import annotations

from typing import Any

import _machine
import pytest


class Lines:
    """Collects what the summary writes (the two methods of a terminal reporter it uses)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(title)

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def test_the_summary_gives_the_loop_the_load_and_the_cpu_shares_of_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_machine, "_START", {})
    ticks = iter([[100, 0, 50, 800, 10, 0, 0, 40], [400, 0, 150, 1100, 110, 0, 0, 140]])
    monkeypatch.setattr(_machine, "_cpu_ticks", lambda: next(ticks))
    _machine.start()
    out = Lines()
    terminal: Any = out
    _machine.summary(terminal)
    title, loop, shares = out.lines
    assert title == "the machine during the run"
    assert loop.startswith("1M-addition loop: ") and " ms at the end; load average" in loop
    # deltas: busy 300 + 100, idle 300, iowait 100, steal 100 of 900
    assert shares == "CPU time of the run: 44% busy, 11% waiting for I/O, 11% stolen"


def test_nothing_is_printed_for_a_run_that_did_not_start_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_machine, "_START", {})
    out = Lines()
    terminal: Any = out
    _machine.summary(terminal)
    assert out.lines == []
