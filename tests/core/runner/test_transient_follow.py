"""Transient scheduler errors while following a real local_cwd app: retried, never fatal early.

The fault is injected in the scheduler object the runner talks to: a ``LocalScheduler``
subclass whose ``describe`` (what ``Runner.status`` calls) raises ``ConnectionResetError``
while an outage lasts, and whose log reads break once mid-stream; the app itself is a real
local_cwd app (a supervisor and a replica process). A small fake at the client boundary:
local_cwd has no network connection to drop.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any, Optional

import pytest

from torchx.runner import Runner
from torchx.runner.follow import SchedulerUnreachableError, afollow, follow
from torchx.schedulers.api import DescribeAppResponse
from torchx.schedulers.local_scheduler import LocalScheduler, create_scheduler
from torchx.specs.api import AppDef, AppState, Role

# prints 40 numbered lines over ~4 s, then succeeds
COUNTER = "import time\nfor i in range(40):\n    print('n', i, flush=True); time.sleep(0.1)\n"
SLEEPER = "import time; print('up', flush=True); time.sleep(120)"


class FlakyLocal(LocalScheduler):
    """local_cwd whose status reads fail while :attr:`down` is set; its first log read breaks."""

    def __init__(self, inner: LocalScheduler) -> None:
        self.__dict__.update(inner.__dict__)
        self.down = threading.Event()
        self.failed_calls = 0
        self.broken_logs = 0

    def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
        if self.down.is_set():
            self.failed_calls += 1
            raise ConnectionResetError(104, "Connection reset by peer")
        return super().describe(app_id)

    def log_iter(
        self, app_id: str, role_name: str, k: int = 0, *a: Any, **kw: Any
    ) -> Iterable[str]:
        lines = super().log_iter(app_id, role_name, k, *a, **kw)
        if self.broken_logs:
            return lines
        self.broken_logs += 1
        return self._break_after(iter(lines), 5)

    @staticmethod
    def _break_after(lines: Iterator[str], n: int) -> Iterator[str]:
        for i, line in enumerate(lines):
            if i == n:
                raise ConnectionResetError(104, "Connection reset by peer")
            yield line


@pytest.fixture
def flaky() -> Iterator[tuple[Runner, FlakyLocal]]:
    holder: list[FlakyLocal] = []

    def factory(session_name: str, **kwargs: Any) -> FlakyLocal:
        holder.append(FlakyLocal(create_scheduler(session_name, **kwargs)))
        return holder[-1]

    with Runner("flaky", {"local_cwd": factory}) as runner:
        runner.scheduler_run_opts("local_cwd")  # creates the scheduler
        yield runner, holder[0]


def app(code: str) -> AppDef:
    return AppDef(
        "counter", roles=[Role("worker", image="", entrypoint=sys.executable, args=["-c", code])]
    )


def outage(scheduler: FlakyLocal, start: float, length: float) -> threading.Thread:
    def run() -> None:
        time.sleep(start)
        scheduler.down.set()
        time.sleep(length)
        scheduler.down.clear()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_an_outage_shorter_than_the_transient_timeout_is_ridden_out(
    flaky: tuple[Runner, FlakyLocal],
) -> None:
    runner, scheduler = flaky
    handle = runner.run(app(COUNTER), "local_cwd")
    lines: list[str] = []
    down = outage(scheduler, 0.5, 2.5)
    result = follow(runner, handle, on_log=lines.append, wait_interval=0.2, transient_timeout=60)
    down.join()
    assert scheduler.failed_calls > 1  # the follow did hit the outage, several times
    assert scheduler.broken_logs == 1  # and a log read that broke mid-stream
    assert result.succeeded and not result.cancelled
    assert lines == [f"worker/0 n {i}" for i in range(40)]  # all, once each, in order
    assert result.logs_shown == {"worker/0": 40}


def test_afollow_rides_out_the_same_outage(flaky: tuple[Runner, FlakyLocal]) -> None:
    runner, scheduler = flaky
    handle = runner.run(app(COUNTER), "local_cwd")
    lines: list[str] = []
    down = outage(scheduler, 0.5, 2.5)
    result = asyncio.run(
        afollow(runner, handle, on_log=lines.append, wait_interval=0.2, transient_timeout=60)
    )
    down.join()
    assert scheduler.failed_calls > 1
    assert result.succeeded and not result.cancelled
    assert lines == [f"worker/0 n {i}" for i in range(40)]


@pytest.mark.parametrize("driver", ["follow", "afollow"])
def test_an_outage_longer_than_the_transient_timeout_fails_and_keeps_the_app(
    flaky: tuple[Runner, FlakyLocal], driver: str
) -> None:
    runner, scheduler = flaky
    handle = runner.run(app(SLEEPER), "local_cwd")
    try:
        scheduler.down.set()
        kwargs: dict[str, Any] = {"wait_interval": 0.2, "transient_timeout": 1.5}
        with pytest.raises(SchedulerUnreachableError) as caught:
            if driver == "follow":
                follow(runner, handle, **kwargs)
            else:
                asyncio.run(afollow(runner, handle, **kwargs))
        message = str(caught.value)
        assert message.startswith(f"could not read the status of TorchX app {handle}:")
        assert "the local_cwd scheduler did not answer for" in message
        assert "ConnectionResetError" in message and "transient_timeout" in message
        assert "\n" not in message
        scheduler.down.clear()
        status = runner.status(handle)  # not cancelled: it may be healthy
        assert status is not None and status.state in (AppState.PENDING, AppState.RUNNING)
    finally:
        scheduler.down.clear()
        runner.cancel(handle)
    status = runner.wait(handle, wait_interval=0.2)
    assert status is not None and status.state == AppState.CANCELLED
