"""The one launch path: LaunchRequest -> build_app -> Runner.dryrun_request/launch, LogTee."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from torchx.runner import Runner, get_runner
from torchx.runner.launch import LaunchRequest, build_app
from torchx.specs import AppDef, AppState, AppStatus, Resource, Role, RoleStatus
from torchx.specs.api import ReplicaState, ReplicaStatus
from torchx.specs.torchxconfig import TorchXConfig
from torchx.util.log_tee_helpers import LogTee


def two_roles() -> AppDef:
    res = Resource(cpu=1, gpu=0, memMB=64)
    return AppDef(
        "two",
        roles=[
            Role("trainer", "img", entrypoint="echo", env={"A": "role"}, resource=res),
            Role("reader", "img", entrypoint="echo", num_replicas=2, resource=res),
        ],
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "exactly one of `component`.*got neither"),
        ({"component": "utils.echo", "app": AppDef("a")}, "got both"),
        ({"app": AppDef("a"), "component_args": ["x"]}, "`component_args` needs `component`"),
        ({"component": "utils.echo", "max_retries": -1}, "`max_retries` must be >= 0"),
    ],
)
def test_request_rejects_bad_combinations(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LaunchRequest(**kwargs)  # type: ignore[arg-type]


def test_build_app_copies_and_applies_overrides() -> None:
    original = two_roles()
    request = LaunchRequest(
        app=original,
        image={"reader": "other"},
        resource="cpu.small",
        max_retries=2,
        env={"A": "request", "B": "b"},
    )
    app = build_app(request)
    trainer, reader = app.roles
    assert (trainer.image, reader.image) == ("img", "other")
    assert trainer.resource.cpu == reader.resource.cpu == 1 and trainer.resource.memMB > 64
    assert trainer.max_retries == reader.max_retries == 2
    assert trainer.env == {"A": "request", "B": "b"}
    assert original.roles[0].env == {"A": "role"} and original.roles[1].image == "img"


def test_per_role_override_with_unknown_role_suggests_a_match() -> None:
    request = LaunchRequest(app=two_roles(), image={"trainr": "x"})
    with pytest.raises(ValueError, match=r"names role `trainr` \(did you mean `trainer`\?\)"):
        build_app(request)


def test_component_args_list_dict_and_defaults() -> None:
    as_list = build_app(LaunchRequest(component="utils.echo", component_args=["--msg", "l"]))
    assert as_list.roles[0].args[-1] == "l"
    as_dict = build_app(LaunchRequest(component="utils.echo", component_args={"msg": "d"}))
    assert as_dict.roles[0].args[-1] == "d"
    defaulted = build_app(
        LaunchRequest(component="utils.echo"), {"utils.echo": {"msg": "from-defaults"}}
    )
    assert defaulted.roles[0].args[-1] == "from-defaults"
    with pytest.raises(ValueError, match="must be a list or a dict, got the string"):
        build_app(LaunchRequest(component="utils.echo", component_args="--msg x"))  # type: ignore[arg-type]


CONFIG = """\
[cli:run]
scheduler = local_cwd

[local_cwd]
log_dir = {log_dir}

[component:utils.echo]
msg = from-config

[torchx:tracker]
fsspec =

[tracker:fsspec]
config = /cfg.txt
"""


def test_dryrun_request_takes_scheduler_cfg_defaults_and_trackers_from_config(
    tmp_path: Path,
) -> None:
    config = TorchXConfig.from_text(CONFIG.format(log_dir=tmp_path / "logs"))
    with Runner("s", config=config) as runner:
        info = runner.dryrun_request(
            LaunchRequest(component="utils.echo", cfg="prepend_cwd=True", env={"X": "1"})
        )
    assert info._scheduler == "local_cwd"
    assert info._cfg is not None and info._cfg["prepend_cwd"] is True
    assert info.request.log_dir.startswith(str(tmp_path / "logs"))
    role = info._app.roles[0] if info._app else None
    assert role is not None and role.args[-1] == "from-config"
    assert role.env["X"] == "1" and role.env["TORCHX_TRACKERS"] == "fsspec"
    assert role.env["TORCHX_TRACKER_FSSPEC_CONFIG"] == "/cfg.txt"


def test_bad_cfg_type_is_one_clear_error() -> None:
    with Runner("s", config=TorchXConfig()) as runner, pytest.raises(ValueError, match="dict or"):
        runner.dryrun_request(LaunchRequest(component="utils.echo", cfg=3))  # type: ignore[arg-type]


def test_launch_runs_in_the_workspace_and_tees_logs(tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("in the workspace\n")
    code = "print(open('marker.txt').read().strip())"
    app = AppDef(
        "ws",
        roles=[Role("w", "unused", entrypoint=sys.executable, args=["-c", code])],
    )
    lines: list[str] = []
    with get_runner() as runner:
        handle = runner.launch(LaunchRequest(app=app, workspace=str(tmp_path)))
        tee = LogTee(runner, handle, lines.append, prefix="[{role}/{replica}] ").start()
        status = runner.wait(handle, wait_interval=60)
        tee.join(30)
    assert status is not None and status.state == AppState.SUCCEEDED
    assert lines == ["[w/0] in the workspace"] and tee.errors == []


def test_workspace_that_is_not_a_directory_is_rejected(tmp_path: Path) -> None:
    with get_runner() as runner, pytest.raises(ValueError, match="is not a directory"):
        runner.dryrun_request(
            LaunchRequest(component="utils.echo", workspace=str(tmp_path / "nope"))
        )


def test_log_tee_reports_unreadable_replicas_to_on_error() -> None:
    seen: list[tuple[str, int, str]] = []
    app = two_roles()

    class NoLogs:
        def log_lines(self, *args: object, **kwargs: object) -> list[str]:
            raise RuntimeError("no logs here")

        def describe(self, handle: str) -> AppDef:
            return app

    tee = LogTee(
        NoLogs(),  # type: ignore[arg-type]
        "x://s/a",
        print,
        on_error=lambda role, k, e: seen.append((role, k, str(e))),
    )
    tee.copy()
    assert seen == [
        ("trainer", 0, "no logs here"),
        ("reader", 0, "no logs here"),
        ("reader", 1, "no logs here"),
    ]
    assert len(tee.errors) == 3


@pytest.mark.parametrize(
    ("structured", "expected"),
    [
        (
            json.dumps({"message": {"message": "Traceback\n  x\nValueError: boom\n"}}),
            "ValueError: boom",
        ),
        (json.dumps({"message": "flat\nlast line", "errorCode": 1}), "last line"),
        ("plain text\n", "plain text"),
        ("<NONE>", ""),
    ],
)
def test_error_summary(structured: str, expected: str) -> None:
    assert AppStatus(AppState.FAILED, structured_error_msg=structured).error_summary() == expected


def test_error_summary_falls_back_to_a_replica_error() -> None:
    replica = ReplicaStatus(
        0, ReplicaState.FAILED, "w", "h", structured_error_msg='{"message": "replica broke"}'
    )
    status = AppStatus(AppState.FAILED, roles=[RoleStatus("w", [replica])])
    assert status.error_summary() == "replica broke"
