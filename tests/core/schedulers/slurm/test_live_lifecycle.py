"""Failure and cancel on the local Slurm: nothing of the app keeps running afterwards.

Slurm gives each component of a heterogeneous job (here: each replica) its own node, so the apps
have as many replicas as the local Slurm has nodes (two).
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from torchx.schedulers.slurm_scheduler import SlurmScheduler, create_scheduler
from torchx.specs.api import AppDef, AppState, Resource, Role, is_terminal

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

_RES = Resource(cpu=1, gpu=0, memMB=128)


def processes_with(text: str) -> list[str]:
    """Command lines of the live processes whose command line contains ``text``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        cmd = raw.replace(b"\0", b" ").decode(errors="replace")
        if text in cmd:
            found.append(f"{pid}: {cmd}")
    return found


def replicas(marker: str) -> list[str]:
    """The replica processes (not the job script's ``srun``) carrying ``marker``."""
    return [p for p in processes_with(marker) if not p.split(": ", 1)[1].startswith("srun")]


def sleeper(name: str, marker: str, replicas: int = 1) -> Role:
    script = "import sys, time; time.sleep(300)"
    return Role(
        name, image="", entrypoint="python", args=["-c", script, marker],
        num_replicas=replicas, resource=_RES,
    )  # fmt: skip


def wait(sched: SlurmScheduler, app_id: str, cond: str, timeout: float = 120) -> AppState:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        desc = sched.describe(app_id)
        assert desc is not None
        if (desc.state == AppState.RUNNING) if cond == "running" else is_terminal(desc.state):
            return desc.state
        sched.wait_for_change(app_id, 1.0)
    raise AssertionError(f"{app_id} not {cond} after {timeout}s")


def wait_gone(marker: str, timeout: float = 30) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def test_cancel_leaves_no_process(tmp_path: Path) -> None:
    marker = f"txf-{uuid.uuid4().hex}"
    sched = create_scheduler("test")
    app = AppDef("cancelme", roles=[sleeper("a", marker), sleeper("b", marker)])
    app_id = sched.submit(app, {"job_dir": str(tmp_path / "job")})
    try:
        assert wait(sched, app_id, "running") == AppState.RUNNING
        deadline = time.monotonic() + 30
        while len(replicas(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(replicas(marker)) == 2, processes_with(marker)
        sched.cancel(app_id)
        assert wait(sched, app_id, "ended") == AppState.CANCELLED
        assert wait_gone(marker) == []
        assert wait_gone(f"[{app_id}.") == []  # no slurmstepd of the job either
    finally:
        sched.delete(app_id)


def test_a_failing_replica_fails_the_app_and_stops_the_others(tmp_path: Path) -> None:
    marker = f"txf-{uuid.uuid4().hex}"
    sched = create_scheduler("test")
    bad = Role(
        "bad", image="", entrypoint="sh", args=["-c", "sleep 2; echo dying >&2; exit 7"],
        resource=_RES,
    )  # fmt: skip
    app = AppDef("failing", roles=[sleeper("good", marker), bad])
    app_id = sched.submit(app, {"job_dir": str(tmp_path / "job")})
    try:
        assert wait(sched, app_id, "ended") == AppState.FAILED
        # sacct records each component's step (state, exit code) a moment after squeue shows the
        # job ended: until bad-0's is there, the msg may name a replica --kill-on-bad-exit stopped
        deadline = time.monotonic() + 30
        desc = sched.describe(app_id)
        while desc is not None and "bad-0" not in desc.msg and time.monotonic() < deadline:
            time.sleep(0.5)
            desc = sched.describe(app_id)
        assert desc is not None and desc.state == AppState.FAILED
        assert "bad-0" in desc.msg and "7" in desc.msg, desc.msg
        states = {(rs.role, r.id): r.state for rs in desc.roles_statuses for r in rs.replicas}
        assert states[("bad", 0)] == AppState.FAILED, states
        assert all(is_terminal(s) for s in states.values()), states
        assert wait_gone(marker) == []
        assert list(sched.log_iter(app_id, "bad", 0)) == ["dying\n"]
    finally:
        sched.delete(app_id)


def test_workspace_is_copied_into_job_dir_and_the_job_runs_there(tmp_path: Path) -> None:
    from _support import run_torchx

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "data.txt").write_text("from the workspace\n")
    (ws / "secret.txt").write_text("not copied\n")
    (ws / ".torchxignore").write_text("secret.txt\n")
    job_dir = tmp_path / "job"
    run = run_torchx(
        "run", "-s", "slurm", "--wait", "--workspace", str(ws), "-cfg", f"job_dir={job_dir}",
        "utils.sh", "cat", "data.txt",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[0]
    assert (job_dir / "data.txt").is_file() and not (job_dir / "secret.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job", "ws"]  # nothing in the cwd
    log = run_torchx("log", handle)
    assert log.stdout.strip().endswith("from the workspace"), (handle, log.stdout, log.stderr)
    assert run_torchx("run", "-s", "slurm", "-cfg", f"job_dir={job_dir}", "--workspace",
                      str(ws), "utils.sh", "true", cwd=tmp_path).returncode != 0  # fmt: skip


def test_a_waiting_app_says_why_in_its_status(tmp_path: Path) -> None:
    from _support import run_torchx

    marker = f"txf-{uuid.uuid4().hex}"
    sched = create_scheduler("test")
    blocker = AppDef("blocker", roles=[sleeper("a", marker), sleeper("b", marker)])
    cfg = {"job_dir": str(tmp_path / "job"), "exclusive": True}  # both nodes, whole
    first = sched.submit(blocker, cfg)
    second = ""
    try:
        assert wait(sched, first, "running") == AppState.RUNNING
        second = sched.submit(AppDef("waiting", roles=[sleeper("c", marker)]), cfg)
        desc = sched.describe(second)
        assert desc is not None and desc.state == AppState.PENDING
        deadline = time.monotonic() + 30
        while "(None)" in desc.msg and time.monotonic() < deadline:  # not evaluated yet
            time.sleep(0.5)
            desc = sched.describe(second)
            assert desc is not None
        assert desc.msg.startswith("PENDING (Resources): waiting for resources"), desc.msg
        status = run_torchx("status", f"slurm://test/{second}").stdout
        assert "PENDING (Resources)" in status, status
    finally:
        for app_id in (second, first):
            if app_id:
                sched.delete(app_id)
    assert wait_gone(marker) == []
