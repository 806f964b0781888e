"""`torchx run` on a non-local scheduler, with an injected fake runner (cmd_run.get_runner)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from torchx.cli import cmd_run
from torchx.specs.api import AppDef, AppState, AppStatus, Role, runopts


class FakeRunner:
    """Records calls; every app it launches is RUNNING, then ends in `final_state` (or stays
    `stuck_in` until cancelled)."""

    def __init__(self, final_state: AppState) -> None:
        self.final_state = final_state
        self.stuck_in: AppState | None = None
        self.cancelled = False
        self.checks = 0
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
        self.checks += 1
        if self.cancelled:
            return AppStatus(AppState.CANCELLED)
        if self.stuck_in is not None:
            return AppStatus(self.stuck_in, msg="trainer[0] ImagePullBackOff: no such image")
        if self.checks == 1:  # the status _launch logs
            return AppStatus(AppState.RUNNING, ui_url="https://ui/app-1")
        return AppStatus(
            self.final_state, msg="boom" if self.final_state != AppState.SUCCEEDED else ""
        )

    def wait_for_change(self, handle: str, timeout: float) -> None:
        self.calls.append(("wait_for_change", timeout))

    def enforce_fail_fast(self, handle: str) -> None:
        self.calls.append(("enforce_fail_fast", handle))

    def cancel(self, handle: str) -> None:
        self.calls.append(("cancel", handle))
        self.cancelled = True

    def describe(self, handle: str) -> AppDef:
        return AppDef("app-1", roles=[Role("trainer", "img", num_replicas=2)])

    def log_lines(self, handle: str, role: str, k: int = 0, *a: Any, **kw: Any) -> Iterator[str]:
        for i in range(30):
            yield f"line {i} from {role}/{k}\n"


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
        "startup_timeout": None,
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
    assert "trainer/0 line 29 from trainer/0" in captured.err
    assert "trainer/1 line 0 from trainer/1" in captured.err


def test_non_local_wait_failure_exits_1_and_ends_with_the_tails(
    fake: FakeRunner, caplog: pytest.LogCaptureFixture
) -> None:
    fake.final_state = AppState.FAILED
    with pytest.raises(SystemExit) as e:
        cmd_run.CmdRun().run(run_args(wait=True))
    assert e.value.code == 1
    assert ("enforce_fail_fast", "fake://torchx/app-1") in fake.calls
    message = caplog.records[-1].getMessage()
    assert message.startswith("TorchX app fake://torchx/app-1 ended FAILED: boom\n")
    # the status has no per-replica states: every replica's tail, the last 20 lines
    assert "last 20 log lines of trainer/0:\n  line 10 from trainer/0\n" in message
    assert message.endswith("  line 29 from trainer/1")


@pytest.mark.parametrize("stuck_in", [AppState.PENDING, AppState.SUBMITTED])
def test_startup_timeout_cancels_an_app_that_does_not_start(
    fake: FakeRunner, caplog: pytest.LogCaptureFixture, stuck_in: AppState
) -> None:
    fake.stuck_in = stuck_in
    caplog.set_level(logging.INFO, logger="torchx.cli.cmd_run")
    with pytest.raises(SystemExit) as e:  # no --wait: --startup_timeout implies it
        cmd_run.CmdRun().run(run_args(startup_timeout=0.2))
    assert e.value.code == 1
    assert ("cancel", "fake://torchx/app-1") in fake.calls
    head = caplog.records[-1].getMessage().splitlines()[0]
    assert head == (
        "TorchX app fake://torchx/app-1 ended CANCELLED: did not start within 0.2s"
        f" ({stuck_in.name}: trainer[0] ImagePullBackOff: no such image)"
    )
    # while it waited, the reason was logged once (the status was read several times)
    waiting = [r.getMessage() for r in caplog.records if " is " in r.getMessage()]
    assert waiting == [
        f"fake://torchx/app-1 is {stuck_in.name}: trainer[0] ImagePullBackOff: no such image"
    ]


def test_startup_timeout_flag_parses_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="torchx run")
    cmd_run.CmdRun().add_arguments(parser)
    assert parser.parse_args(["--startup_timeout", "90", "utils.echo"]).startup_timeout == 90.0
    for bad in ("-1", "soon", "nan"):
        with pytest.raises(SystemExit) as e:
            parser.parse_args(["--startup_timeout", bad, "utils.echo"])
        assert e.value.code == 2
        assert f"expected seconds >= 0 (e.g. 300), got '{bad}'" in capsys.readouterr().err


def test_interrupt_while_waiting_cancels(fake: FakeRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    cancelled: list[str] = []

    def wait_for_change(handle: str, timeout: float) -> None:
        raise KeyboardInterrupt

    fake.final_state = AppState.RUNNING
    monkeypatch.setattr(fake, "wait_for_change", wait_for_change)
    monkeypatch.setattr(fake, "cancel", cancelled.append)
    with pytest.raises(SystemExit) as e:
        cmd_run.CmdRun().run(run_args(wait=True))
    assert e.value.code == 130
    assert cancelled == ["fake://torchx/app-1"]  # once: by the CLI, not also by the follow
