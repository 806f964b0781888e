"""The follow layer (torchx.runner.follow) against real local_cwd apps."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from torchx.runner import Runner, get_runner
from torchx.runner.follow import Follower, failure_message, follow
from torchx.specs import macros
from torchx.specs.api import AppDef, AppState, Role

# prints "line 0".."line 29", then replica 1 fails while replica 0 keeps sleeping
FAILING = (
    "import sys, time\n"
    "for i in range(30): print('line', i, flush=True)\n"
    "if sys.argv[1] == '1': raise SystemExit('replica one broke')\n"
    "time.sleep(60)\n"
)
SLEEPER = "import time; print('started', flush=True); time.sleep(60)"


@pytest.fixture
def runner() -> Iterator[Runner]:
    with get_runner() as r:
        yield r


def app(code: str, replicas: int = 1) -> AppDef:
    role = Role(
        "worker",
        image="",
        entrypoint=sys.executable,
        args=["-c", code, macros.replica_id],
        num_replicas=replicas,
    )
    return AppDef("follow", roles=[role])


def state(runner: Runner, handle: str) -> AppState:
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None
    return status.state


def test_success_streams_prefixed_lines_and_has_no_message(runner: Runner) -> None:
    lines: list[str] = []
    handle = runner.run(app("print('hello')", replicas=2), "local_cwd")
    result = follow(runner, handle, on_log=lines.append, wait_interval=0.5)
    assert result.succeeded and result.state == "SUCCEEDED"
    assert sorted(lines) == ["worker/0 hello", "worker/1 hello"]
    assert result.tails == {} and result.failure_message() == "" and result.reason == ""
    assert not result.deadline_expired and not result.cancelled


def test_deadline_cancels_a_sleeping_app(runner: Runner) -> None:
    handle = runner.run(app(SLEEPER), "local_cwd")
    result = follow(runner, handle, timeout=1.0, wait_interval=0.2)
    assert result.deadline_expired and result.cancelled
    assert result.state == "CANCELLED"
    assert result.reason == "its deadline passed"
    head = result.failure_message().splitlines()[0]
    assert head == f"TorchX app {handle} ended CANCELLED: its deadline passed"
    assert state(runner, handle) == AppState.CANCELLED


def test_deadline_can_keep_the_app_running(runner: Runner) -> None:
    handle = runner.run(app(SLEEPER), "local_cwd")
    try:
        result = follow(runner, handle, timeout=0.5, cancel_at_deadline=False, wait_interval=0.2)
        assert result.deadline_expired and not result.cancelled
        assert result.state in ("PENDING", "RUNNING")
        assert result.reason == "its deadline passed (kept running)"
        assert f"{handle} is still {result.state} at its deadline" in result.failure_message()
        status = runner.status(handle)
        assert status is not None and not status.is_terminal()
    finally:
        runner.cancel(handle)
    assert state(runner, handle) == AppState.CANCELLED


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "read-after-end"])
def test_failed_app_gives_the_tail_of_its_failed_replica(runner: Runner, stream: bool) -> None:
    lines: list[str] = []
    handle = runner.run(app(FAILING, replicas=2), "local_cwd")
    result = follow(
        runner, handle, on_log=lines.append if stream else None, log_tail=5, wait_interval=0.5
    )
    assert result.state == "FAILED"
    assert list(result.tails) == ["worker/1"]  # the failed replica only
    assert result.tails["worker/1"][-1] == "replica one broke"
    assert result.tails["worker/1"][:4] == [f"line {i}" for i in (26, 27, 28, 29)]
    assert result.reason  # the replica's error, e.g. its exit code
    message = result.failure_message()
    assert message.startswith(f"TorchX app {handle} ended FAILED: {result.reason}\n")
    assert "last 5 log lines of worker/1:\n  line 26\n" in message
    assert "line 0\n" not in message  # a tail, not a head
    # fail-fast: the sleeping replica 0 was stopped with the app
    assert state(runner, handle) == AppState.FAILED
    if stream:
        assert "worker/1 line 29" in lines  # (replica 0 may be stopped before it prints all)


def test_an_error_in_the_log_callback_cancels_the_app(runner: Runner) -> None:
    handle = runner.run(app(SLEEPER), "local_cwd")

    def broken(line: str) -> None:
        raise RuntimeError(f"sink broke on {line!r}")

    with pytest.raises(RuntimeError, match="sink broke on 'worker/0 started'"):
        follow(runner, handle, on_log=broken, wait_interval=0.2)
    assert state(runner, handle) == AppState.CANCELLED


def test_cancel_on_failure_false_keeps_the_app(runner: Runner) -> None:
    handle = runner.run(app(SLEEPER), "local_cwd")

    def broken(line: str) -> None:
        raise RuntimeError("sink broke")

    try:
        with pytest.raises(RuntimeError, match="sink broke"):
            follow(runner, handle, on_log=broken, cancel_on_failure=False, wait_interval=0.2)
        status = runner.status(handle)
        assert status is not None and status.state == AppState.RUNNING
    finally:
        runner.cancel(handle)
    assert state(runner, handle) == AppState.CANCELLED


def test_an_exception_in_the_with_block_cancels_the_app(runner: Runner) -> None:
    handle = runner.run(app(SLEEPER), "local_cwd")
    with pytest.raises(KeyboardInterrupt), Follower(runner, handle, wait_interval=0.2) as follower:
        assert follower.wait(0.3) is False  # still running
        raise KeyboardInterrupt
    assert state(runner, handle) == AppState.CANCELLED


def test_follow_runs_in_a_worker_thread(runner: Runner) -> None:
    """The workflow executor follows each step in its own thread."""
    handle = runner.run(app("import time; time.sleep(0.5)"), "local_cwd")
    results = []
    thread = threading.Thread(target=lambda: results.append(follow(runner, handle)))
    thread.start()
    thread.join(60)
    assert results and results[0].succeeded


def test_failure_message_of_a_vanished_app() -> None:
    assert failure_message("local_cwd://torchx/x", None) == (
        "TorchX app local_cwd://torchx/x no longer exists (purged by its scheduler?)"
    )
