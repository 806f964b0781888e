"""Fault tests of local_cwd: huge output, a deleted state dir, concurrent cancels, a replica that
ignores SIGTERM. Each checks the final state, that no process of the app is left, and that no
log line was lost."""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support import pid_alive

from torchx.schedulers.local_scheduler import LocalScheduler, create_scheduler
from torchx.specs.api import AppDef, AppState, Role, is_terminal

SESSION = "faults"
LINE = 64  # bytes per stdout line of the big-output replica
BIG_LINES = 100 * 1024 * 1024 // LINE  # 100 MiB
ERR_EVERY = 100_000


@pytest.fixture
def sched(tmp_path: Path) -> Iterator[LocalScheduler]:
    scheduler = create_scheduler(SESSION, state_dir=str(tmp_path / "state"), grace_period=1)
    yield scheduler
    scheduler.close()


def _python_role(code: str) -> Role:
    return Role("r", image="/", entrypoint=sys.executable, args=["-c", textwrap.dedent(code)])


def _app_dir(sched: LocalScheduler, app_id: str) -> Path:
    return Path(sched._state_root_dir()) / SESSION / app_id


def _marked_pids(app_dir: Path) -> list[int]:
    """Live processes carrying the app's marker (replicas and all they started)."""
    marker = f"TORCHX_LOCAL_APP_DIR={app_dir}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in environ and pid_alive(int(entry)):
            found.append(int(entry))
    return found


def _wait_gone(app_dir: Path, supervisor_pid: int, limit: float = 20) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not _marked_pids(app_dir) and not pid_alive(supervisor_pid):
            return
        time.sleep(0.05)
    raise AssertionError(f"processes left: {_marked_pids(app_dir)}, supervisor {supervisor_pid}")


def _wait_terminal(sched: LocalScheduler, app_id: str, limit: float = 120) -> AppState:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        desc = sched.describe(app_id)
        assert desc is not None
        if is_terminal(desc.state):
            return desc.state
        sched.wait_for_change(app_id, 1)
    raise AssertionError(f"{app_id} did not end")


def _running(sched: LocalScheduler, app_id: str, log: Path, first_line: str) -> int:
    """Wait until the replica printed ``first_line``; return the supervisor pid."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().startswith(first_line):
            state = json.loads((_app_dir(sched, app_id) / "state.json").read_text())
            return int(state["supervisor_pid"])
        time.sleep(0.02)
    raise AssertionError(f"{app_id} did not start")


def _rss_kib(pid: int | str = "self") -> int:
    """The current resident set size (VmRSS) of ``pid`` in KiB, not a high-water mark."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS in /proc/{pid}/status")


def _sample_rss_kib(pid: int, stop: threading.Event, out: list[int]) -> None:
    """Appends ``pid``'s current RSS to ``out`` every 20 ms until ``stop`` or the process ends."""
    while not stop.is_set():
        try:
            out.append(_rss_kib(pid))
        except OSError:
            return
        time.sleep(0.02)


_BIG = f"""
import sys
out, err = sys.stdout.buffer, sys.stderr.buffer
chunk = []
for i in range({BIG_LINES}):
    chunk.append(b"%09d " % i + b"x" * {LINE - 11} + b"\\n")
    if i % {ERR_EVERY} == 0:
        out.write(b"".join(chunk)); chunk = []
        err.write(b"err %d\\n" % i); err.flush()
out.write(b"".join(chunk))
"""


@pytest.mark.slow
def test_100mb_of_output_loses_no_line_with_bounded_memory(sched: LocalScheduler) -> None:
    app_id = sched.submit(AppDef("big", roles=[_python_role(_BIG)]), {})
    app_dir = _app_dir(sched, app_id)
    state_file = app_dir / "state.json"
    while not state_file.exists() or "supervisor_pid" not in state_file.read_text():
        time.sleep(0.01)
    supervisor = int(json.loads(state_file.read_text())["supervisor_pid"])
    stop = threading.Event()
    samples: list[int] = []
    sampler = threading.Thread(target=_sample_rss_kib, args=(supervisor, stop, samples))
    sampler.start()
    try:
        assert _wait_terminal(sched, app_id) == AppState.SUCCEEDED
    finally:
        stop.set()
        sampler.join()
    # the supervisor relays 100 MiB of output: it must have been measured while it did
    assert len(samples) >= 5, f"only {len(samples)} RSS samples of the supervisor"
    assert max(samples) < 64 * 1024, f"supervisor RSS reached {max(samples)} KiB"  # not 100 MB

    replica_dir = app_dir / "r" / "0"
    assert (replica_dir / "stdout.log").stat().st_size == BIG_LINES * LINE
    outs, errs = 0, 0
    before = _rss_kib()
    during: list[int] = []
    for line in sched.log_iter(app_id, "r"):  # the combined log, through the public reader
        if line.startswith("err "):
            assert line == f"err {errs * ERR_EVERY}\n", line
            errs += 1
            during.append(_rss_kib())  # this process's RSS while the reader is mid-file
        else:
            assert len(line) == LINE and line.startswith(f"{outs:09d} "), (outs, line[:20])
            outs += 1
    assert (outs, errs) == (BIG_LINES, (BIG_LINES - 1) // ERR_EVERY + 1)
    assert len(during) == errs
    grown = max(during) - before
    assert grown < 64 * 1024, f"reading the log grew this process by {grown} KiB"
    _wait_gone(app_dir, supervisor)


@pytest.mark.parametrize("detach", [False, True])
def test_state_dir_deleted_mid_run_stops_the_app(sched: LocalScheduler, detach: bool) -> None:
    role = Role("r", image="/", entrypoint="sh", args=["-c", "echo started; sleep 300 & wait"])
    app_id = sched.submit(AppDef("gone", roles=[role]), {"detach": detach})
    app_dir = _app_dir(sched, app_id)
    supervisor = _running(sched, app_id, app_dir / "r" / "0" / "stdout.log", "started")
    assert len(_marked_pids(app_dir)) == 2  # sh and its sleep
    shutil.rmtree(app_dir)
    _wait_gone(app_dir, supervisor)  # the supervisor noticed and stopped everything
    assert sched.describe(app_id) is None  # final state: the app is gone, not RUNNING forever
    assert not app_dir.exists()  # and nothing was written back


def test_two_concurrent_cancels(sched: LocalScheduler, tmp_path: Path) -> None:
    role = Role("r", image="/", entrypoint="sh", args=["-c", "echo started; exec sleep 300"])
    app_id = sched.submit(
        AppDef(
            "cc",
            roles=[role],
        ),
        {"detach": True},
    )
    app_dir = _app_dir(sched, app_id)
    supervisor = _running(sched, app_id, app_dir / "r" / "0" / "stdout.log", "started")
    others = [create_scheduler(SESSION, state_dir=str(tmp_path / "state")) for _ in range(2)]
    errors: list[BaseException] = []

    def cancel(scheduler: LocalScheduler) -> None:
        try:
            scheduler.cancel(app_id)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=cancel, args=(s,)) for s in others]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == [] and not any(t.is_alive() for t in threads)
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.CANCELLED
    assert desc.msg.startswith("cancelled by process")
    assert "".join(sched.log_iter(app_id, "r")) == "started\n"
    _wait_gone(app_dir, supervisor)


def test_replica_ignoring_sigterm_is_killed_after_the_grace_period(sched: LocalScheduler) -> None:
    code = """
    import signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("ignoring SIGTERM", flush=True)
    time.sleep(300)
    """
    app_id = sched.submit(AppDef("stubborn", roles=[_python_role(code)]), {"grace_period": 1.0})
    app_dir = _app_dir(sched, app_id)
    supervisor = _running(sched, app_id, app_dir / "r" / "0" / "stdout.log", "ignoring SIGTERM")
    sched.cancel(app_id)
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.CANCELLED
    replica = desc.roles_statuses[0].replicas[0]
    assert replica.state == AppState.CANCELLED
    error = json.loads(replica.structured_error_msg)
    assert error["errorCode"] == -9 and error["message"].startswith("stopped by SIGKILL")
    assert "".join(sched.log_iter(app_id, "r")) == "ignoring SIGTERM\n"
    _wait_gone(app_dir, supervisor)


def test_error_summary_names_the_failed_replica_not_the_stopped_one(sched: LocalScheduler) -> None:
    from torchx.specs.api import AppStatus

    role = Role(
        "r",
        image="/",
        entrypoint="sh",
        args=["-c", 'if [ "${replica_id}" = 1 ]; then exit 3; fi; exec sleep 300'],
        num_replicas=2,
    )
    app_id = sched.submit(AppDef("fan", roles=[role]), {})
    assert _wait_terminal(sched, app_id) == AppState.FAILED
    desc = sched.describe(app_id)
    assert desc is not None
    status = AppStatus(desc.state, roles=desc.roles_statuses, msg=desc.msg)
    assert status.error_summary() == "exited with code 3"
    stopped = desc.roles_statuses[0].replicas[0]
    assert stopped.state == AppState.CANCELLED
    assert json.loads(stopped.structured_error_msg)["message"] == (
        "stopped by SIGTERM: replica r/1 exited with code 3"
    )
