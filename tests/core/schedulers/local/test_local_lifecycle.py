"""Cross-process behaviour of local_cwd: cancel, launcher death, detach, list, close, signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from _support import pid_alive as _alive

from torchx.schedulers.local_scheduler import LocalScheduler, create_scheduler
from torchx.specs.api import AppDef, AppState, Role, is_terminal

_LAUNCHER = """
import json, sys, time
from torchx.schedulers.local_scheduler import create_scheduler
from torchx.specs.api import AppDef, Role
sched = create_scheduler("test", grace_period=1)
role = Role("r", "img", entrypoint="bash", args=["-c", sys.argv[1]], num_replicas=2)
app_id = sched.submit(AppDef("life", roles=[role]), json.loads(sys.argv[2]))
print(app_id, flush=True)
time.sleep(float(sys.argv[3]))
"""

_GRANDCHILDREN = "sleep 300 & echo child $!; setsid sleep 300 & echo escaped $!; sleep 300"


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args], stdout=subprocess.PIPE, text=True
    )


def _launch(script: str, cfg: dict[str, Any], linger: float) -> tuple[subprocess.Popen[str], str]:
    proc = _python(_LAUNCHER, script, json.dumps(cfg), str(linger))
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _wait_state(sched: LocalScheduler, app_id: str, done: Any, limit: float = 30) -> AppState:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        desc = sched.describe(app_id)
        if desc is not None and done(desc.state):
            return desc.state
        sched.wait_for_change(app_id, 1)
    raise AssertionError(f"{app_id} did not reach the expected state")


def _descendant_pids(sched: LocalScheduler, app_id: str) -> list[int]:
    """Replica pids from state.json plus the pids the replicas printed (child/escaped)."""
    _wait_state(sched, app_id, lambda s: s == AppState.RUNNING)
    path = Path(sched._state_root_dir()) / "test" / app_id / "state.json"
    pids = [r["pid"] for r in json.loads(path.read_text())["roles"][0]["replicas"]]
    for k in range(2):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            lines = list(sched.log_iter(app_id, "r", k))
            if len(lines) >= 2:
                pids += [int(line.split()[1]) for line in lines[:2]]
                break
            time.sleep(0.05)
    assert len(pids) == 6
    return pids


@pytest.fixture
def sched() -> LocalScheduler:
    return create_scheduler("test", grace_period=1)


def test_kill9_launcher_leaves_nothing(sched: LocalScheduler) -> None:
    launcher, app_id = _launch(_GRANDCHILDREN, {}, 300)
    pids = _descendant_pids(sched, app_id)
    assert all(_alive(pid) for pid in pids)
    launcher.kill()
    launcher.wait()
    assert _wait_state(sched, app_id, is_terminal) == AppState.CANCELLED
    desc = sched.describe(app_id)
    assert desc is not None and "launcher process" in desc.msg
    assert not [pid for pid in pids if _alive(pid)]


def test_detached_survives_launcher_and_cancel_from_other_process(sched: LocalScheduler) -> None:
    launcher, app_id = _launch("trap '' TERM; sleep 300", {"detach": True}, 0)
    launcher.wait()
    pids = []
    _wait_state(sched, app_id, lambda s: s == AppState.RUNNING)
    time.sleep(0.3)
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.RUNNING
    state = json.loads((Path(sched._state_root_dir()) / "test" / app_id / "state.json").read_text())
    pids = [r["pid"] for r in state["roles"][0]["replicas"]]
    canceller = _python(
        """
        import sys
        from torchx.schedulers.local_scheduler import create_scheduler
        create_scheduler("test").cancel(sys.argv[1])
        print(create_scheduler("test").describe(sys.argv[1]).state.name)
        """,
        app_id,
    )
    out, _ = canceller.communicate(timeout=60)
    assert out.strip() == "CANCELLED"
    assert not [pid for pid in pids if _alive(pid)], "SIGTERM-ignoring replicas get SIGKILL"


def test_list_from_another_process(sched: LocalScheduler) -> None:
    ids = [
        sched.submit(AppDef(f"l{i}", roles=[Role("r", "i", entrypoint="true")]), {})
        for i in range(2)
    ]
    for app_id in ids:
        _wait_state(sched, app_id, is_terminal)
    lister = _python(
        """
        import json
        from torchx.schedulers.local_scheduler import create_scheduler
        print(json.dumps([[a.app_id, a.state.name, a.name] for a in create_scheduler("test").list()]))
        """
    )
    out, _ = lister.communicate(timeout=60)
    assert json.loads(out) == [[ids[0], "SUCCEEDED", "l0"], [ids[1], "SUCCEEDED", "l1"]]
    assert create_scheduler("other-session").list() == []


def test_close_stops_attached_but_not_detached(sched: LocalScheduler) -> None:
    role = Role("r", "i", entrypoint="sleep", args=["300"])
    attached = sched.submit(AppDef("att", roles=[role]), {})
    detached = sched.submit(AppDef("det", roles=[role]), {"detach": True})
    for app_id in (attached, detached):
        _wait_state(sched, app_id, lambda s: s == AppState.RUNNING)
    sched.close()
    other = create_scheduler("test", grace_period=1)
    desc = other.describe(attached)
    assert desc is not None and desc.state == AppState.CANCELLED
    desc = other.describe(detached)
    assert desc is not None and desc.state == AppState.RUNNING
    other.cancel(detached)
    desc = other.describe(detached)
    assert desc is not None and desc.state == AppState.CANCELLED


def test_no_signal_handlers_installed(tmp_path: Path) -> None:
    checker = _python(
        """
        import signal
        before = [signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)]
        from torchx.schedulers.local_scheduler import create_scheduler
        from torchx.specs.api import AppDef, Role
        sched = create_scheduler("test")
        desc = sched.run_local_job(AppDef("s", roles=[Role("r", "i", entrypoint="true")]))
        sched.close()
        after = [signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)]
        print(desc.state.name, before == after)
        """
    )
    out, _ = checker.communicate(timeout=60)
    assert out.split() == ["SUCCEEDED", "True"]


def test_dead_supervisor_reports_failed(sched: LocalScheduler) -> None:
    app_id = sched.submit(
        AppDef("dead", roles=[Role("r", "i", entrypoint="sleep", args=["300"])]), {}
    )
    _wait_state(sched, app_id, lambda s: s == AppState.RUNNING)
    state = json.loads((Path(sched._state_root_dir()) / "test" / app_id / "state.json").read_text())
    os.kill(state["supervisor_pid"], signal.SIGKILL)
    assert _wait_state(sched, app_id, is_terminal) == AppState.FAILED
    desc = sched.describe(app_id)
    assert desc is not None and "exited without writing a final state" in desc.msg
    replica_pid = state["roles"][0]["replicas"][0]["pid"]
    deadline = time.monotonic() + 10
    while _alive(replica_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(replica_pid), "a dead supervisor's replicas are killed when it is noticed"


def test_dead_supervisor_leaves_no_escaped_descendant(
    sched: LocalScheduler, tmp_path: Path
) -> None:
    pidfile = tmp_path / "escaped.pid"
    script = f"setsid sleep 302 & echo $! > {pidfile}; sleep 300"
    app_id = sched.submit(
        AppDef("orphans", roles=[Role("r", "i", entrypoint="sh", args=["-c", script])]), {}
    )
    _wait_state(sched, app_id, lambda s: s == AppState.RUNNING)
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    escaped = int(pidfile.read_text())
    assert _alive(escaped)
    state = json.loads((Path(sched._state_root_dir()) / "test" / app_id / "state.json").read_text())
    os.kill(state["supervisor_pid"], signal.SIGKILL)
    assert _wait_state(sched, app_id, is_terminal) == AppState.FAILED
    deadline = time.monotonic() + 10
    while _alive(escaped) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(escaped), "a process that left its replica's group is still found by its env"
