"""How fast and how busy the machine was during a run: makes runs of the suite comparable.

The same 2-core machine runs the same suite in 12 minutes one hour and 24 the next. The
summary gives, for the start and the end of the run, a fixed pure-Python loop's time (the CPU's
speed as this interpreter sees it) and the load average, and for the whole run the share of the
machine's CPU time that was busy, waiting for I/O and stolen (``/proc/stat``). Read-only:
nothing here changes how tests run. ``tests/conftest.py`` calls :func:`start` in the
controller and prints :func:`summary` at the end.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

__all__ = ["loop_ms", "start", "summary"]

_LOOP = 1_000_000
_START: dict[str, object] = {}


def loop_ms() -> float:
    """Milliseconds of a fixed loop of :data:`_LOOP` additions (the best of 3)."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        total = 0
        for i in range(_LOOP):
            total += i
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def _cpu_ticks() -> list[int]:
    """The first line of ``/proc/stat`` (user nice system idle iowait irq softirq steal)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    except OSError:
        return []
    return [int(f) for f in fields]


def _load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "-"


def start() -> None:
    """Records the machine's state as the run starts."""
    _START.update(loop=loop_ms(), load=_load(), ticks=_cpu_ticks(), at=time.monotonic())


def summary(terminal: pytest.TerminalReporter) -> None:
    """Prints the loop's time and the load at start and end, and the run's CPU shares."""
    if not _START:
        return
    terminal.write_sep("=", "the machine during the run")
    terminal.write_line(
        f"1M-addition loop: {_START['loop']:.0f} ms at the start, {loop_ms():.0f} ms at the end;"
        f" load average (1/5/15 min): {_START['load']} at the start, {_load()} at the end"
    )
    before, after = _START["ticks"], _cpu_ticks()
    if not (isinstance(before, list) and len(before) == len(after) == 8):
        return
    delta = [b - a for a, b in zip(before, after, strict=True)]
    total = sum(delta) or 1
    user, nice, system, _idle, iowait, irq, softirq, steal = delta
    busy = user + nice + system + irq + softirq
    terminal.write_line(
        f"CPU time of the run: {100 * busy / total:.0f}% busy, {100 * iowait / total:.0f}%"
        f" waiting for I/O, {100 * steal / total:.0f}% stolen"
    )
