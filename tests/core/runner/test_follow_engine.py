"""The follow state machine (torchx.runner._follow_engine) with scripted statuses and times.

The engine does no I/O: each test feeds it what ``Runner.status`` returned (or raised) at a
given time and checks the action; the drivers are tested against real apps elsewhere
(test_follow.py, test_follow_startup.py, test_transient_follow.py).
"""

from __future__ import annotations

import errno
import subprocess
from typing import Optional

import pytest

from torchx.runner._follow_engine import Engine, Stop
from torchx.runner.follow import Action, is_transient
from torchx.specs.api import AppState, AppStatus, ReplicaStatus, RoleStatus

PULL = "worker[0] waiting: ImagePullBackOff: Back-off pulling image"


def status(state: AppState, msg: str = "", replicas: Optional[list[AppState]] = None) -> AppStatus:
    roles = []
    if replicas is not None:
        reps = [ReplicaStatus(i, s, "worker", "") for i, s in enumerate(replicas)]
        roles = [RoleStatus("worker", reps)]
    return AppStatus(state, msg=msg, roles=roles)


def test_a_running_app_waits_one_interval_and_reports_each_change_once() -> None:
    engine = Engine(0.0, wait_interval=2.0)
    first = engine.step(status(AppState.PENDING, PULL), 0.0)
    assert first == Action(notify=True, wait=2.0)
    assert engine.step(status(AppState.PENDING, PULL), 2.0) == Action(wait=2.0)  # unchanged
    assert engine.step(status(AppState.RUNNING), 4.0).notify  # state changed
    assert engine.step(status(AppState.RUNNING, "restarted"), 6.0).notify  # message changed


@pytest.mark.parametrize(
    "state", [AppState.SUCCEEDED, AppState.FAILED, AppState.CANCELLED], ids=lambda s: s.name
)
def test_a_terminal_state_ends_the_follow(state: AppState) -> None:
    action = Engine(0.0).step(status(state), 1.0)
    assert action.stop is Stop.ENDED and action.notify
    assert action.fail_fast == (state == AppState.FAILED)


def test_fail_fast_is_asked_once_and_again_after_it_failed() -> None:
    engine = Engine(0.0)
    # a FAILED app whose scheduler still shows it running is not terminal for the status:
    # fail-fast is asked at the first FAILED status only
    assert engine.step(status(AppState.FAILED), 0.0).fail_fast
    assert not engine.step(status(AppState.FAILED), 1.0).fail_fast
    engine.fail_fast_failed()  # the call failed (transiently): ask again
    assert engine.step(status(AppState.FAILED), 2.0).fail_fast


def test_a_vanished_app_ends_the_follow() -> None:
    action = Engine(0.0).step(None, 0.0)
    assert action.stop is Stop.VANISHED and not action.notify


def test_the_deadline_stops_a_running_app_and_bounds_the_wait() -> None:
    engine = Engine(0.0, deadline=5.0, wait_interval=4.0)
    assert engine.step(status(AppState.RUNNING), 3.0).wait == pytest.approx(2.0)
    assert engine.step(status(AppState.RUNNING), 5.0).stop is Stop.DEADLINE
    # a terminal state seen at the deadline is an end, not a deadline
    assert Engine(0.0, deadline=5.0).step(status(AppState.SUCCEEDED), 9.0).stop is Stop.ENDED


def test_the_startup_timeout_gives_the_schedulers_reason() -> None:
    engine = Engine(0.0, startup_timeout=30.0, wait_interval=60.0)
    assert engine.step(status(AppState.PENDING, PULL), 10.0).wait == pytest.approx(20.0)
    action = engine.step(status(AppState.PENDING, PULL), 30.0)
    assert action.stop is Stop.STARTUP
    assert action.reason == f"did not start within 30s (PENDING: {PULL})"


def test_a_replica_still_pending_means_not_started() -> None:
    engine = Engine(0.0, startup_timeout=5.0)
    waiting = status(AppState.RUNNING, PULL, [AppState.RUNNING, AppState.PENDING])
    assert engine.step(waiting, 6.0).stop is Stop.STARTUP


def test_once_started_the_startup_timeout_is_disarmed() -> None:
    engine = Engine(0.0, startup_timeout=5.0)
    assert engine.step(status(AppState.RUNNING, "", [AppState.RUNNING]), 1.0).stop is None
    restarting = status(AppState.RUNNING, PULL, [AppState.PENDING])  # a later restart
    assert engine.step(restarting, 60.0).stop is None


def test_transient_failures_back_off_then_give_up_after_the_transient_timeout() -> None:
    engine = Engine(0.0, transient_timeout=10.0)
    error = ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    waits = []
    now = 0.0
    while True:
        action = engine.failed(error, now)
        if action.stop is not None:
            break
        assert action.retry and action.wait > 0
        waits.append(action.wait)
        now += action.wait
    assert action.stop is Stop.UNREACHABLE
    assert now == pytest.approx(10.0)  # retried for exactly the transient timeout
    assert waits[:4] == [0.5, 1.0, 2.0, 4.0]  # doubling back-off
    assert engine.unreachable_seconds(now) == pytest.approx(10.0)


def test_an_answer_resets_the_transient_period() -> None:
    engine = Engine(0.0, transient_timeout=10.0)
    error = TimeoutError("read timed out")
    assert engine.failed(error, 0.0).retry
    assert engine.failed(error, 9.0).retry
    assert engine.step(status(AppState.RUNNING), 9.5).stop is None  # recovered
    assert engine.failed(error, 15.0).retry  # a new period: 10 s from 15
    assert engine.failed(error, 24.0).retry
    assert engine.failed(error, 25.0).stop is Stop.UNREACHABLE


def test_the_deadline_still_applies_while_the_scheduler_does_not_answer() -> None:
    engine = Engine(0.0, deadline=3.0, transient_timeout=300.0)
    assert engine.failed(ConnectionResetError(), 2.9).wait == pytest.approx(0.1)  # to the deadline
    assert engine.failed(ConnectionResetError(), 3.0).stop is Stop.DEADLINE


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="`wait_interval` must be > 0"):
        Engine(0.0, wait_interval=0)
    with pytest.raises(ValueError, match="`startup_timeout` must be >= 0"):
        Engine(0.0, startup_timeout=-1)
    with pytest.raises(ValueError, match="`transient_timeout` must be >= 0"):
        Engine(0.0, transient_timeout=-1)


class SlurmCommandError(RuntimeError):
    """Named like torchx's: classified by name and message."""

    def __init__(self, message: str, returncode: int = 1) -> None:
        super().__init__(message)
        self.returncode = returncode


class SignalException(Exception):
    """Named like torchx's CLI signal exception."""


def kubernetes_api_exception(code: int) -> Exception:
    from kubernetes.client.exceptions import ApiException

    return ApiException(status=code, reason="x")


def test_transient_errors_are_told_from_definitive_ones() -> None:
    import urllib3

    assert is_transient(ConnectionRefusedError())
    assert is_transient(TimeoutError())
    assert is_transient(OSError(errno.EHOSTUNREACH, "No route to host"))
    assert is_transient(urllib3.exceptions.ProtocolError("Connection aborted."))
    assert is_transient(urllib3.exceptions.MaxRetryError(None, "/api", "refused"))  # type: ignore[arg-type]
    assert is_transient(kubernetes_api_exception(503))
    assert is_transient(kubernetes_api_exception(429))
    assert not is_transient(kubernetes_api_exception(403))
    assert not is_transient(kubernetes_api_exception(404))
    assert is_transient(subprocess.TimeoutExpired(["squeue"], 60))
    assert is_transient(
        SlurmCommandError("`squeue --json` failed (1): Unable to contact slurm controller")
    )
    assert not is_transient(SlurmCommandError("`scontrol` failed (1): Invalid job id specified"))
    assert not is_transient(ValueError("bad"))
    assert not is_transient(FileNotFoundError(errno.ENOENT, "no such file"))
    # a wrapped transient error counts; interruptions never do
    try:
        try:
            raise ConnectionResetError("reset")
        except ConnectionResetError as e:
            raise RuntimeError("status failed") from e
    except RuntimeError as wrapped:
        assert is_transient(wrapped)
    assert not is_transient(SignalException("got SIGTERM"))
    assert not is_transient(KeyboardInterrupt())
