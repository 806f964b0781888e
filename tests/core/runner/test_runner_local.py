"""Runner end to end on the real local_cwd scheduler through get_runner()."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from torchx.runner import Runner, get_runner
from torchx.specs.api import AppDef, AppState, Resource, Role


@pytest.fixture
def runner() -> Iterator[Runner]:
    with get_runner() as r:
        yield r


def python_app(name: str, code: str) -> AppDef:
    role = Role(
        "worker",
        image="unused",
        entrypoint=sys.executable,
        args=["-c", code],
        resource=Resource(cpu=1, gpu=0, memMB=64),
    )
    return AppDef(name, roles=[role])


def test_local_cwd_is_available_and_default(runner: Runner) -> None:
    assert "local_cwd" in runner.scheduler_backends()


def test_run_wait_and_logs(runner: Runner) -> None:
    code = "import os; print('job', os.environ['TORCHX_JOB_ID'])"
    handle = runner.run(python_app("hello", code), "local_cwd")
    assert handle.startswith("local_cwd://torchx/hello-")
    status = runner.wait(handle, wait_interval=60)
    assert status is not None and status.state == AppState.SUCCEEDED
    lines = list(runner.log_lines(handle, "worker", 0))
    assert lines == [f"job {handle}\n"]
    app = runner.describe(handle)
    assert app is not None and app.name == "hello"


def test_failed_app(runner: Runner) -> None:
    handle = runner.run(python_app("fails", "raise SystemExit(3)"), "local_cwd")
    status = runner.wait(handle, wait_interval=60)
    assert status is not None and status.state == AppState.FAILED
    with pytest.raises(Exception, match="job did not succeed"):
        status.raise_for_status()


def test_cancel_running_app(runner: Runner) -> None:
    handle = runner.run(python_app("sleeper", "import time; time.sleep(120)"), "local_cwd")
    status = runner.status(handle)
    assert status is not None and not status.is_terminal()
    runner.cancel(handle)
    status = runner.wait(handle, wait_interval=60)
    assert status is not None and status.state == AppState.CANCELLED


def test_run_builtin_component(runner: Runner) -> None:
    handle = runner.run_component("utils.echo", ["--msg", "from component"], "local_cwd")
    status = runner.wait(handle, wait_interval=60)
    assert status is not None and status.state == AppState.SUCCEEDED
    role = runner.describe(handle).roles[0].name  # type: ignore[union-attr]
    assert "from component\n" in list(runner.log_lines(handle, role, 0))


def test_unknown_app_status_is_none(runner: Runner) -> None:
    assert runner.status("local_cwd://torchx/does-not-exist-123") is None
