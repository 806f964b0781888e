"""Runner.run_component / dryrun_component with a component file and a minimal fake scheduler."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import pytest

from torchx.runner import Runner
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.specs.api import AppDef, AppDryRunInfo, AppState, CfgVal

COMPONENT = '''
from torchx import specs


def greet(msg: str = "hello", times: int = 1, *extra: str) -> specs.AppDef:
    """Greets.

    Args:
        msg: the message
        times: how often
        extra: more words
    """
    role = specs.Role(
        name="greeter",
        image="img",
        entrypoint="echo",
        args=[msg] * times + list(extra),
        resource=specs.Resource(cpu=1, gpu=0, memMB=64),
    )
    return specs.AppDef(name="greet", roles=[role])
'''


class RecordingScheduler(Scheduler[Mapping[str, CfgVal]]):
    def __init__(self, session_name: str, **kwargs: Any) -> None:
        super().__init__("rec", session_name)
        self.scheduled: list[AppDef] = []

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[AppDef]:
        return AppDryRunInfo(app, repr)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        self.scheduled.append(dryrun_info.request)
        return f"app-{len(self.scheduled)}"

    def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
        return DescribeAppResponse(app_id=app_id, state=AppState.RUNNING)

    def list(self, cfg: Optional[Mapping[str, CfgVal]] = None) -> list[ListAppResponse]:
        return []

    def _cancel_existing(self, app_id: str) -> None:
        pass


@pytest.fixture
def component(tmp_path: Path) -> str:
    path = tmp_path / "greet.py"
    path.write_text(textwrap.dedent(COMPONENT))
    return f"{path}:greet"


def _args(info: AppDryRunInfo[Any]) -> list[str]:
    return list(info.request.roles[0].args)


def test_dryrun_component_with_cli_args(component: str) -> None:
    runner = Runner("s", {"rec": RecordingScheduler})
    info = runner.dryrun_component(component, ["--msg", "hi", "--times", "2", "x"], "rec")
    assert _args(info) == ["hi", "hi", "x"]
    assert info.request.roles[0].env["TORCHX_JOB_ID"] == "rec://s/${app_id}"


def test_dryrun_component_with_dict_uses_config_path(component: str) -> None:
    runner = Runner("s", {"rec": RecordingScheduler})
    info = runner.dryrun_component(component, {"msg": "cfg", "times": 3}, "rec")
    assert _args(info) == ["cfg", "cfg", "cfg"]


def test_component_defaults_apply_below_explicit_args(component: str) -> None:
    runner = Runner(
        "s", {"rec": RecordingScheduler}, component_defaults={component: {"msg": "dflt"}}
    )
    assert _args(runner.dryrun_component(component, [], "rec")) == ["dflt"]
    assert _args(runner.dryrun_component(component, ["--msg", "cli"], "rec")) == ["cli"]


def test_run_component_schedules(component: str) -> None:
    runner = Runner("s", {"rec": RecordingScheduler})
    handle = runner.run_component(component, ["--msg", "go"], "rec")
    assert handle == "rec://s/app-1"
    app = runner.describe(handle)
    assert app is not None and app.roles[0].args == ["go"]
