"""Prestarted ("spare") supervisors: ``prestarted_supervisor()`` and the spare's entry point.

A spare is a real supervisor process started before its app exists; these tests run real
apps through it and check that nothing it started outlives what it should.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchx import specs
from torchx.schedulers._local import _spare
from torchx.schedulers._local._spare_entry import receive
from torchx.schedulers.local_scheduler import LocalScheduler, prestarted_supervisor


@pytest.fixture
def scheduler(tmp_path: Path) -> Iterator[LocalScheduler]:
    sched = LocalScheduler("spare", state_dir=str(tmp_path / "state"))
    yield sched
    sched.close()


def _app(script: str) -> specs.AppDef:
    role = specs.Role("main", image=os.getcwd(), entrypoint="sh", args=["-c", script])
    return specs.AppDef("spare", roles=[role])


def _supervisor_pid(scheduler: LocalScheduler, app_id: str, tmp_path: Path) -> int:
    """The pid the app's supervisor wrote into state.json (once it has written it)."""
    state = tmp_path / "state" / scheduler.session_name / app_id / "state.json"
    deadline = time.monotonic() + 10
    while "supervisor_pid" not in (data := json.loads(state.read_text())):
        assert time.monotonic() < deadline, "the supervisor never wrote its state"
        time.sleep(0.01)
    return int(data["supervisor_pid"])


def _gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether ``pid`` has exited and been reaped (no /proc entry) within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not os.path.exists(f"/proc/{pid}"):
            return True
        time.sleep(0.01)
    return False


def _wait(scheduler: LocalScheduler, app_id: str) -> specs.AppState:
    deadline = time.monotonic() + 30
    while (desc := scheduler.describe(app_id)) is not None and not specs.is_terminal(desc.state):
        assert time.monotonic() < deadline, f"{app_id} did not end"
        scheduler.wait_for_change(app_id, 1.0)
    assert desc is not None
    return desc.state


def _waiting_spare_pid() -> int:
    spare = _spare._spare
    assert spare is not None, "no spare is waiting"
    return spare.process.pid


def test_the_first_app_of_the_block_runs_under_the_prestarted_supervisor(
    scheduler: LocalScheduler, tmp_path: Path
) -> None:
    with prestarted_supervisor():
        spare_pid = _waiting_spare_pid()
        app_id = scheduler.schedule(scheduler.submit_dryrun(_app("echo spare-ok"), {}))
        assert _spare._spare is None  # handed over: the next launch starts its own
        assert _wait(scheduler, app_id) == specs.AppState.SUCCEEDED
    assert _supervisor_pid(scheduler, app_id, tmp_path) == spare_pid
    assert list(scheduler.log_iter(app_id, "main", 0)) == ["spare-ok\n"]
    supervisor_log = tmp_path / "state" / scheduler.session_name / app_id / "supervisor.log"
    assert supervisor_log.exists()  # its output went to the app's supervisor log
    assert _gone(spare_pid)


def test_an_unused_spare_is_stopped_when_the_block_exits() -> None:
    with prestarted_supervisor():
        spare_pid = _waiting_spare_pid()
    assert _spare._spare is None
    assert _gone(spare_pid, timeout=0.5)  # killed and reaped by the block's exit


def test_a_disabled_block_starts_nothing() -> None:
    with prestarted_supervisor(enabled=False):
        assert _spare._spare is None


def test_an_environment_change_in_the_block_starts_a_fresh_supervisor(
    scheduler: LocalScheduler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with prestarted_supervisor():
        spare_pid = _waiting_spare_pid()
        monkeypatch.setenv("TORCHX_SPARE_TEST", "changed")  # after the spare started
        app_id = scheduler.schedule(scheduler.submit_dryrun(_app("echo $TORCHX_SPARE_TEST"), {}))
        assert _wait(scheduler, app_id) == specs.AppState.SUCCEEDED
    assert _supervisor_pid(scheduler, app_id, tmp_path) != spare_pid
    assert list(scheduler.log_iter(app_id, "main", 0)) == ["changed\n"]
    assert _gone(spare_pid)


def test_a_forked_child_launches_with_its_own_supervisor(
    scheduler: LocalScheduler, tmp_path: Path
) -> None:
    with prestarted_supervisor():
        spare_pid = _waiting_spare_pid()
        child = os.fork()
        if child == 0:  # the child launches first: the parent's spare is not its to use
            code = 1
            try:
                app_id = scheduler.schedule(scheduler.submit_dryrun(_app("echo child"), {}))
                ok = _wait(scheduler, app_id) == specs.AppState.SUCCEEDED
                code = 0 if ok and _supervisor_pid(scheduler, app_id, tmp_path) != spare_pid else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        app_id = scheduler.schedule(scheduler.submit_dryrun(_app("echo parent"), {}))
        assert _wait(scheduler, app_id) == specs.AppState.SUCCEEDED
    assert _supervisor_pid(scheduler, app_id, tmp_path) == spare_pid


LAUNCHER = """
import os, sys
from torchx import specs
from torchx.schedulers.local_scheduler import LocalScheduler, prestarted_supervisor
from torchx.schedulers._local import _spare

sched = LocalScheduler("spare", state_dir=sys.argv[1])
with prestarted_supervisor():
    print(_spare._spare.process.pid, flush=True)
    if sys.argv[2] == "launch":
        role = specs.Role("main", image=os.getcwd(), entrypoint="sleep", args=["60"])
        app_id = sched.schedule(sched.submit_dryrun(specs.AppDef("spare", roles=[role]), {}))
        print(app_id, flush=True)
    sys.stdin.read()  # until the test kills this process
"""


def _launcher(tmp_path: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(LAUNCHER), str(tmp_path / "state"), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_spare_exits_when_its_launcher_dies_before_using_it(tmp_path: Path) -> None:
    launcher = _launcher(tmp_path, "idle")
    try:
        assert launcher.stdout is not None
        spare_pid = int(launcher.stdout.readline())
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
        assert _gone(spare_pid)  # EOF on its channel; reaped by init (it left our tree)
    finally:
        launcher.kill()
        launcher.wait()


def test_an_attached_app_of_a_spare_stops_when_its_launcher_dies(tmp_path: Path) -> None:
    launcher = _launcher(tmp_path, "launch")
    try:
        assert launcher.stdout is not None
        spare_pid = int(launcher.stdout.readline())
        app_id = launcher.stdout.readline().strip()
        sched = LocalScheduler("spare", state_dir=str(tmp_path / "state"))
        assert _supervisor_pid(sched, app_id, tmp_path) == spare_pid
        launcher.send_signal(signal.SIGKILL)  # the lifeline went over SCM_RIGHTS
        launcher.wait()
        assert _wait(sched, app_id) == specs.AppState.CANCELLED
        desc = sched.describe(app_id)
        assert desc is not None and "launcher process" in desc.msg
        assert _gone(spare_pid)
    finally:
        launcher.kill()
        launcher.wait()


def test_receive_takes_one_assignment_with_its_descriptors() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    control, lifeline = os.pipe()
    try:
        socket.send_fds(ours, [b"L/some/app dir"], [control, lifeline])
        got = receive(theirs.detach())
        assert got is not None
        app_dir, control_fd, launcher_fd = got
        assert app_dir == "/some/app dir"
        assert launcher_fd is not None
        assert os.path.sameopenfile(control_fd, control)
        assert os.path.sameopenfile(launcher_fd, lifeline)
        os.close(control_fd)
        os.close(launcher_fd)
    finally:
        ours.close()
        os.close(control)
        os.close(lifeline)


@pytest.mark.parametrize(
    "message, nfds",
    [
        (None, 0),  # EOF: the launcher discarded the spare
        (b"D/app", 0),  # no control socket
        (b"D/app", 2),  # detached, yet a lifeline came with it
        (b"L", 2),  # no app dir
    ],
)
def test_receive_runs_nothing_for_eof_or_a_malformed_message(
    message: bytes | None, nfds: int
) -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    r, w = os.pipe()
    try:
        if message is not None:
            socket.send_fds(ours, [message], [r, w][:nfds])
        ours.close()
        before = set(os.listdir("/proc/self/fd"))
        assert receive(theirs.detach()) is None
        assert set(os.listdir("/proc/self/fd")) <= before  # received descriptors are closed
    finally:
        ours.close()
        os.close(r)
        os.close(w)
