"""Where a ``--dist loadgroup`` run's time goes: the seconds each xdist group took, summed.

A group's tests run one after another on one worker, so the longest group bounds the run.
``tests/conftest.py`` feeds every test report to :func:`record` and prints :func:`summary` at
the end of the run, beside pytest's ``--durations`` list. Read-only: nothing here changes how
tests run.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

__all__ = ["TOP", "group_of", "record", "summary"]

TOP = 10
"""How many groups the summary lists (the longest first)."""

_SECONDS: defaultdict[str, float] = defaultdict(float)
_TESTS: defaultdict[str, set[str]] = defaultdict(set)
_WORKER: dict[str, str] = {}


def group_of(nodeid: str) -> str:
    """The group a test id names (``path::test[param]@group``), or ``""`` for none."""
    tail = nodeid.rpartition("]")[2]
    return nodeid.rpartition("@")[2] if "@" in tail else ""


def record(report: pytest.TestReport) -> None:
    """Adds a test phase's duration (setup, call or teardown) to its group's total."""
    group = group_of(report.nodeid)
    if not group:
        return
    _SECONDS[group] += report.duration
    _TESTS[group].add(report.nodeid)
    worker = getattr(getattr(report, "node", None), "workerinput", {}).get("workerid")
    if isinstance(worker, str):
        _WORKER[group] = worker


def _label(group: str) -> str:
    """A group's name, a module group shown from ``tests/`` on."""
    head, sep, tail = group.rpartition("/tests/")
    return f"tests/{tail}" if sep and head else group


def summary(terminal: pytest.TerminalReporter) -> None:
    """Prints the :data:`TOP` longest groups: seconds, tests, worker; then each worker's sum."""
    if not _SECONDS:
        return
    terminal.write_sep("=", f"slowest {TOP} xdist groups (setup + call + teardown, summed)")
    longest = sorted(_SECONDS.items(), key=lambda kv: kv[1], reverse=True)[:TOP]
    for group, seconds in longest:
        worker = _WORKER.get(group, "-")
        tests = len(_TESTS[group])
        terminal.write_line(f"{seconds:8.1f}s {tests:5d} tests  {worker:5s} {_label(group)}")
    per_worker: defaultdict[str, float] = defaultdict(float)
    for group, seconds in _SECONDS.items():
        per_worker[_WORKER.get(group, "-")] += seconds
    busy = ", ".join(f"{w} {s:.0f}s" for w, s in sorted(per_worker.items()))
    terminal.write_line(f"per worker: {busy}")
