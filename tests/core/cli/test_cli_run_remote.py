"""`torchx run` on a non-local scheduler, with an injected fake runner (cmd_run.get_runner)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

import pytest

from torchx.cli import cmd_run
from torchx.specs.api import AppDef, AppState, AppStatus, Role, runopts


class FakeRunner:
    """Records calls; every app it launches ends in `final_state`."""

    def __init__(self, final_state: AppState) -> None:
        self.final_state = final_state
        self.calls: list[tuple[str, Any]] = []

    def __enter__(self) -> FakeRunner:
        return self

    def __exit__(self, *exc: object) -> bool:
        return False

    def scheduler_run_opts(self, scheduler: str) -> runopts:
        opts = runopts()
        opts.add("queue", type_=str, help="queue", default="default")
        return opts

    def run_component(self, **kwargs: Any) -> str:
        self.calls.append(("run_component", kwargs))
        return "fake://torchx/app-1"

    def status(self, handle: str) -> AppStatus:
        return AppStatus(AppState.RUNNING, ui_url="https://ui/app-1")

    def wait(self, handle: str, wait_interval: float = 10) -> AppStatus:
        self.calls.append(("wait", wait_interval))
        return AppStatus(
            self.final_state, msg="boom" if self.final_state != AppState.SUCCEEDED else ""
        )

    def describe(self, handle: str) -> AppDef:
        return AppDef("app-1", roles=[Role("trainer", "img", num_replicas=2)])

    def log_lines(self, handle: str, role: str, k: int = 0, *a: Any, **kw: Any) -> Iterator[str]:
        yield f"line from {role}/{k}\n"


def run_args(**overrides: Any) -> argparse.Namespace:
    values = {
        "scheduler": "fake",
        "scheduler_args": "queue=gpu",
        "dryrun": False,
        "wait": False,
        "log": False,
        "workspace": "",
        "parent_run_id": None,
        "tee_logs": False,
        "stdin": False,
        "component_name_and_args": ["utils.echo", "--msg", "hi"],
    }
    values.update(overrides)
    return argparse.Namespace(**values)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeRunner:
    runner = FakeRunner(AppState.SUCCEEDED)
    monkeypatch.setattr(cmd_run, "get_runner", lambda **kwargs: runner)
    return runner


def test_non_local_run_does_not_wait(fake: FakeRunner, capsys: pytest.CaptureFixture[str]) -> None:
    cmd_run.CmdRun().run(run_args())
    assert capsys.readouterr().out.strip() == "fake://torchx/app-1"
    ((name, kwargs),) = fake.calls
    assert name == "run_component"
    assert kwargs["component"] == "utils.echo"
    assert kwargs["component_args"] == ["--msg", "hi"]
    assert kwargs["cfg"] == {"queue": "gpu"}
    assert kwargs["workspace"] is None


def test_non_local_wait_with_logs(fake: FakeRunner, capsys: pytest.CaptureFixture[str]) -> None:
    cmd_run.CmdRun().run(run_args(log=True))
    captured = capsys.readouterr()
    assert ("wait", 1) in fake.calls
    assert "trainer/0 line from trainer/0" in captured.err
    assert "trainer/1 line from trainer/1" in captured.err


def test_non_local_wait_failure_exits_1(fake: FakeRunner) -> None:
    fake.final_state = AppState.FAILED
    with pytest.raises(SystemExit) as e:
        cmd_run.CmdRun().run(run_args(wait=True))
    assert e.value.code == 1


def test_interrupt_while_waiting_cancels(fake: FakeRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    cancelled: list[str] = []

    def wait(handle: str, wait_interval: float = 10) -> AppStatus:
        raise KeyboardInterrupt

    monkeypatch.setattr(fake, "wait", wait)
    monkeypatch.setattr(fake, "cancel", cancelled.append, raising=False)
    with pytest.raises(SystemExit) as e:
        cmd_run.CmdRun().run(run_args(wait=True))
    assert e.value.code == 130
    assert cancelled == ["fake://torchx/app-1"]
