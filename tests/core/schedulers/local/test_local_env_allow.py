"""``env_allow`` on ``local_cwd``: the replicas and their supervisor hold only allowed variables.

Real processes: the test reads ``/proc/<pid>/environ`` of a running replica and of its
supervisor (the replica's parent, which a replica could read as ``/proc/$PPID/environ``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from torchx.runner import get_runner
from torchx.specs import AppDef, AppState, Resource, Role

SECRET = "s3cr3t-env-allow-7c1e"
# prints its own and its parent's (the supervisor's) pid, then waits to be read and cancelled
CODE = "import os, time; print('pids', os.getpid(), os.getppid(), flush=True); time.sleep(120)"


@pytest.fixture
def runner() -> Iterator[Any]:
    with get_runner() as r:
        yield r


def _environ(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        entries = [e.decode(errors="replace") for e in f.read().split(b"\0") if e]
    return dict(e.split("=", 1) for e in entries if "=" in e)


def _running_pids(runner: Any, handle: str) -> tuple[int, int]:
    """Waits for the replica's ``pids`` line; returns (replica pid, supervisor pid)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = runner.status(handle)
        assert status is not None and status.state not in (AppState.FAILED, AppState.SUCCEEDED)
        try:
            lines = list(runner.log_lines(handle, "w", 0))
        except RuntimeError:
            lines = []
        for line in lines:
            if line.startswith("pids "):
                _, pid, ppid = line.split()
                return int(pid), int(ppid)
        time.sleep(0.2)
    raise AssertionError(f"replica of {handle} never printed its pids")


def _launch(runner: Any, cfg: str) -> str:
    role = Role(
        "w",
        "unused",
        entrypoint=sys.executable,
        args=["-c", CODE],
        env={"ROLE_VAR": "from-role"},
        resource=Resource(1, 0, 64),
    )
    return runner.run(
        AppDef("envallow", roles=[role]), "local_cwd", cfg=runner.cfg_from_str("local_cwd", cfg)
    )


@pytest.mark.parametrize("cfg", ["env_allow=", "env_allow=FAKE_KEEP*"])
def test_env_allow_keeps_secrets_out_of_replica_and_supervisor(
    cfg: str, runner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_API_TOKEN", SECRET)
    monkeypatch.setenv("FAKE_KEEP_ME", "kept")
    handle = _launch(runner, cfg)
    try:
        replica, supervisor = _running_pids(runner, handle)
        with open(f"/proc/{supervisor}/cmdline", "rb") as f:
            assert b"supervisor" in f.read()  # the replica's parent is its supervisor
        for pid in (replica, supervisor):
            env = _environ(pid)
            assert "FAKE_API_TOKEN" not in env
            with open(f"/proc/{pid}/environ", "rb") as f:
                assert SECRET.encode() not in f.read()
            assert env.get("FAKE_KEEP_ME") == ("kept" if "FAKE_KEEP" in cfg else None)
            assert "PATH" in env  # always kept
        env = _environ(replica)
        assert env["ROLE_VAR"] == "from-role"  # the AppDef's env
        assert env["TORCHX_RANK0_HOST"] == "localhost"  # what torchx sets
    finally:
        runner.cancel(handle)
    status = runner.wait(handle, wait_interval=60)
    assert status is not None and status.state == AppState.CANCELLED


def test_without_env_allow_the_replica_inherits_everything(
    runner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # TorchX's behaviour: the launcher's environment reaches the replicas (and the supervisor)
    monkeypatch.setenv("FAKE_API_TOKEN", SECRET)
    handle = _launch(runner, "")
    try:
        replica, supervisor = _running_pids(runner, handle)
        assert _environ(replica)["FAKE_API_TOKEN"] == SECRET
        assert _environ(supervisor)["FAKE_API_TOKEN"] == SECRET
    finally:
        runner.cancel(handle)
        runner.wait(handle, wait_interval=60)


def test_env_drop_wins_over_env_allow(runner: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_API_TOKEN", SECRET)
    monkeypatch.setenv("FAKE_KEEP_ME", "kept")
    handle = _launch(runner, "env_allow=FAKE_*,env_drop=*TOKEN*")
    try:
        replica, supervisor = _running_pids(runner, handle)
        for pid in (replica, supervisor):
            env = _environ(pid)
            assert "FAKE_API_TOKEN" not in env and env["FAKE_KEEP_ME"] == "kept"
    finally:
        runner.cancel(handle)
        runner.wait(handle, wait_interval=60)


def test_a_spare_supervisor_with_the_full_environment_is_not_used(
    runner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.schedulers.local_scheduler import prestarted_supervisor

    monkeypatch.setenv("FAKE_API_TOKEN", SECRET)
    with prestarted_supervisor():  # started with the launcher's whole environment
        handle = _launch(runner, "env_allow=")
    try:
        replica, supervisor = _running_pids(runner, handle)
        assert "FAKE_API_TOKEN" not in _environ(supervisor)
        assert "FAKE_API_TOKEN" not in _environ(replica)
    finally:
        runner.cancel(handle)
        runner.wait(handle, wait_interval=60)


def test_a_spare_started_with_the_apps_env_allow_runs_it_without_the_secret(
    runner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Airflow operator's case: the block is given the env_allow the launch will use."""
    from torchx.schedulers._local import _spare
    from torchx.schedulers.local_scheduler import prestarted_supervisor

    monkeypatch.setenv("FAKE_API_TOKEN", SECRET)
    monkeypatch.setenv("FAKE_KEEP_ME", "kept")
    with prestarted_supervisor(env_allow=["FAKE_KEEP*"]):
        spare = _spare._spare
        assert spare is not None
        handle = _launch(runner, "env_allow=FAKE_KEEP*")
    try:
        replica, supervisor = _running_pids(runner, handle)
        assert supervisor == spare.process.pid  # the spare ran it: no second interpreter start
        for pid in (supervisor, replica):
            env = _environ(pid)
            assert "FAKE_API_TOKEN" not in env and env.get("FAKE_KEEP_ME") == "kept"
    finally:
        runner.cancel(handle)
        runner.wait(handle, wait_interval=60)


def test_env_allow_is_recorded_as_patterns_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_API_TOKEN", SECRET)
    with get_runner() as runner:
        cfg = runner.cfg_from_str("local_cwd", "env_allow=FAKE_*;HOME")
        assert cfg["env_allow"] == ["FAKE_*", "HOME"]
        info = runner.dryrun(AppDef("x", roles=[_role()]), "local_cwd", cfg=cfg)
    assert info.request.env_allow == ["FAKE_*", "HOME"]
    assert SECRET not in str(info) and SECRET not in repr(info.request)
    assert os.environ["FAKE_API_TOKEN"] == SECRET


def _role() -> Role:
    return Role("w", "unused", entrypoint="true", resource=Resource(1, 0, 64))


@pytest.mark.parametrize(
    ("cfg", "recorded"), [("", None), ("env_allow=", "x"), ("env_allow=PY*", None)]
)
def test_replicas_stay_unbuffered_when_the_launchers_setting_is_not_inherited(
    cfg: str, recorded: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")
    with get_runner() as runner:
        parsed = runner.cfg_from_str("local_cwd", cfg)
        info = runner.dryrun(AppDef("x", roles=[_role()]), "local_cwd", cfg=parsed)
    (param,) = info.request.role_params["w"]
    assert param.env.get("PYTHONUNBUFFERED") == recorded
