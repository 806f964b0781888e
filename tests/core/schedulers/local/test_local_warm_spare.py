"""The warm spare: a process that launched a local app keeps a supervisor for its next one.

Real supervisors and apps throughout; each test stops the warm spare it leaves behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchx import specs
from torchx.schedulers._local import _spare
from torchx.schedulers.local_scheduler import LocalScheduler, prestarted_supervisor

CHILD = """
import os, sys, time
from torchx import specs
from torchx.schedulers._local import _spare
from torchx.schedulers.local_scheduler import LocalScheduler

sched = LocalScheduler("warm", state_dir=sys.argv[1])
role = specs.Role("main", image=os.getcwd(), entrypoint="true")
app_id = sched.schedule(sched.submit_dryrun(specs.AppDef("warm", roles=[role]), {}))
while _spare._warm is None:
    time.sleep(0.01)
print(_spare._warm.process.pid, flush=True)
time.sleep(60)
"""


@pytest.fixture(autouse=True)
def _no_warm_spare_left() -> Iterator[None]:
    # one left (or still being started) by another module's launch in this worker (xdist)
    assert _spare.settle(10.0)
    _discard_warm()
    yield
    assert _spare.settle(10.0)  # a spare the last launch's thread is still starting
    _discard_warm()


def _discard_warm() -> None:
    spare = _spare.take_warm()
    if spare is not None:
        spare.discard()


@pytest.fixture
def scheduler(tmp_path: Path) -> Iterator[LocalScheduler]:
    sched = LocalScheduler("warm", state_dir=str(tmp_path / "state"))
    yield sched
    sched.close()


def _app(script: str) -> specs.AppDef:
    role = specs.Role("main", image=os.getcwd(), entrypoint="sh", args=["-c", script])
    return specs.AppDef("warm", roles=[role])


def _launch(scheduler: LocalScheduler, script: str) -> str:
    return scheduler.schedule(scheduler.submit_dryrun(_app(script), {}))


def _supervisor_pid(scheduler: LocalScheduler, app_id: str, tmp_path: Path) -> int:
    state = tmp_path / "state" / scheduler.session_name / app_id / "state.json"
    deadline = time.monotonic() + 10
    while "supervisor_pid" not in (data := json.loads(state.read_text())):
        assert time.monotonic() < deadline, "the supervisor never wrote its state"
        time.sleep(0.01)
    return int(data["supervisor_pid"])


def _ended(scheduler: LocalScheduler, app_id: str) -> specs.AppState:
    deadline = time.monotonic() + 30
    while (desc := scheduler.describe(app_id)) is not None and not specs.is_terminal(desc.state):
        assert time.monotonic() < deadline, f"{app_id} did not end"
        scheduler.wait_for_change(app_id, 1.0)
    assert desc is not None
    return desc.state


def _warm_spare() -> _spare.Spare:
    """The warm spare, once the thread that starts it after a launch has started it."""
    assert _spare.settle(10.0), "the thread starting the warm spare did not end"
    warm = _spare._warm
    assert warm is not None, "no warm spare after a launch outside a block"
    return warm


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not os.path.exists(f"/proc/{pid}"):
            return True
        time.sleep(0.01)
    return False


def test_the_next_app_runs_under_the_supervisor_started_after_the_first(
    scheduler: LocalScheduler, tmp_path: Path
) -> None:
    first = _launch(scheduler, "echo one")
    warm = _warm_spare()
    assert _supervisor_pid(scheduler, first, tmp_path) != warm.process.pid
    second = _launch(scheduler, "echo two")
    assert _supervisor_pid(scheduler, second, tmp_path) == warm.process.pid
    assert _warm_spare() is not warm  # one for the next app
    assert _ended(scheduler, first) == _ended(scheduler, second) == specs.AppState.SUCCEEDED
    assert list(scheduler.log_iter(second, "main", 0)) == ["two\n"]


def test_no_warm_spare_inside_a_prestarted_block(scheduler: LocalScheduler) -> None:
    with prestarted_supervisor():
        app_id = _launch(scheduler, "true")
    assert _ended(scheduler, app_id) == specs.AppState.SUCCEEDED
    # a launch outside a block counts its replenish thread before it returns: none ran here
    assert _spare.settle(10.0)
    assert _spare._warm is None  # the block's caller launches once (torchx run)


def test_an_environment_change_is_not_run_by_the_warm_spare(
    scheduler: LocalScheduler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _launch(scheduler, "true")
    warm = _warm_spare()
    monkeypatch.setenv("TORCHX_WARM_TEST", "changed")
    app_id = _launch(scheduler, "echo $TORCHX_WARM_TEST")
    assert _supervisor_pid(scheduler, app_id, tmp_path) != warm.process.pid
    assert _ended(scheduler, app_id) == specs.AppState.SUCCEEDED
    assert list(scheduler.log_iter(app_id, "main", 0)) == ["changed\n"]
    assert _gone(warm.process.pid)  # declined, then stopped


def test_the_warm_spare_exits_when_its_launcher_is_killed(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path / "state")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        pid = int(child.stdout.readline())
        assert os.path.exists(f"/proc/{pid}")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert _gone(pid)  # EOF on its channel: nothing left behind
