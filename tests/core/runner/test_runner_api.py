"""Runner against an in-test fake scheduler (construction, dryrun steps, app management)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Optional

import pytest
from _support import write_dist

from torchx.runner import Runner, get_runner
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.specs.api import (
    AppDef,
    AppDryRunInfo,
    AppState,
    CfgVal,
    Resource,
    Role,
    UnknownAppException,
    UnknownSchedulerException,
    Workspace,
    runopts,
)
from torchx.specs.torchxconfig import TorchXConfig
from torchx.workspace.api import WorkspaceMixin


class FakeScheduler(Scheduler[Mapping[str, CfgVal]]):
    """An in-memory scheduler: apps start RUNNING; ``wait_for_change`` finishes them."""

    def __init__(self, session_name: str, **kwargs: Any) -> None:
        super().__init__("fake", session_name)
        self.kwargs = kwargs
        self.apps: dict[str, AppState] = {}
        self.calls: list[str] = []
        self.waits: list[tuple[str, float]] = []
        self.closed = False

    def _run_opts(self) -> runopts:
        opts = runopts()
        opts.add("foo", type_=str, help="a string", default="bar")
        opts.add("n", type_=int, help="an int", default=1)
        return opts

    def _pre_build_validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        self.calls.append("pre_build_validate")

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        self.calls.append("validate")

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        self.calls.append("submit_dryrun")
        return AppDryRunInfo({"app": app, "cfg": dict(cfg)}, repr)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        app_id = f"{dryrun_info.request['app'].name}-{len(self.apps)}"
        self.apps[app_id] = AppState.RUNNING
        return app_id

    def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
        state = self.apps.get(app_id)
        if state is None:
            return None
        return DescribeAppResponse(
            app_id=app_id,
            state=state,
            ui_url=f"fake://{app_id}",
            roles=[Role("described", "img")],
            metadata={"from": "describe"},
        )

    def list(self, cfg: Optional[Mapping[str, CfgVal]] = None) -> list[ListAppResponse]:
        return [ListAppResponse(app_id=a, state=s) for a, s in self.apps.items()]

    def _cancel_existing(self, app_id: str) -> None:
        self.calls.append(f"cancel:{app_id}")
        self.apps[app_id] = AppState.CANCELLED

    def _delete_existing(self, app_id: str) -> None:
        self.calls.append(f"delete:{app_id}")
        del self.apps[app_id]

    def log_iter(
        self, app_id: str, role_name: str, k: int = 0, *args: Any, **kwargs: Any
    ) -> Iterable[str]:
        return iter([f"{role_name}/{k}: line\n"])

    def wait_for_change(self, app_id: str, timeout: float) -> None:
        self.waits.append((app_id, timeout))
        self.apps[app_id] = AppState.SUCCEEDED

    def close(self) -> None:
        self.closed = True


class FakeWorkspaceScheduler(WorkspaceMixin[None], FakeScheduler):
    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        self.calls.append("build_workspace")
        role.image = f"built:{workspace}"


class Factory:
    def __init__(self, cls: type[FakeScheduler] = FakeScheduler) -> None:
        self.cls = cls
        self.created: list[FakeScheduler] = []

    def __call__(self, session_name: str, **kwargs: Any) -> FakeScheduler:
        sched = self.cls(session_name, **kwargs)
        self.created.append(sched)
        return sched


@pytest.fixture
def factory() -> Factory:
    return Factory()


@pytest.fixture
def runner(factory: Factory) -> Iterator[Runner]:
    with Runner("sess", {"fake": factory, "fake_ws": Factory(FakeWorkspaceScheduler)}) as r:
        yield r


@pytest.fixture
def events() -> Iterator[list[logging.LogRecord]]:
    records: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Collect()
    logger = logging.getLogger("torchx-events-null")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


def make_app(name: str = "app", **role_kwargs: Any) -> AppDef:
    role = Role("trainer", "img", entrypoint="echo", args=["hi"], resource=Resource(1, 0, 64))
    for key, value in role_kwargs.items():
        setattr(role, key, value)
    return AppDef(name, roles=[role])


def _apis(records: list[logging.LogRecord]) -> list[str]:
    import json

    return [json.loads(r.getMessage())["api"] for r in records]


# ------------------------------------------------------------------ construction


def test_get_runner_finds_scheduler_plugins_through_entry_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.plugins import registry

    write_dist(tmp_path, "fakesched", {"torchx.schedulers": {"fake": "fakesched:create"}})
    (tmp_path / "fakesched.py").write_text(
        "from torchx.testing import FakeScheduler\n"
        "def create(session_name, **kwargs):\n"
        "    return FakeScheduler(session_name)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("TORCHX_PLUGINS_SOURCE", raising=False)
    registry.cache_clear()
    try:
        with get_runner() as runner:
            assert runner.name() == "torchx"
            assert runner.scheduler_backends()[-1] == "fake"  # after the builtins
            assert "local_cwd" in runner.scheduler_backends()
            handle = runner.run(make_app(), "fake")
            assert handle.startswith("fake://torchx/")
    finally:
        registry.cache_clear()
        sys.modules.pop("fakesched", None)
    with pytest.warns(FutureWarning, match="Custom session names are deprecated"):
        assert get_runner("custom").name() == "custom"


def test_env_vars_and_params_reach_factories_lazily(
    monkeypatch: pytest.MonkeyPatch, factory: Factory
) -> None:
    monkeypatch.setenv("TORCHX_FOO", "1")
    monkeypatch.setenv("TORCHX_TRACKERS", "t1")
    monkeypatch.setenv("torchx_lower", "x")
    runner = Runner("s", {"fake": factory}, scheduler_params={"foo": "explicit", "bar": 2})
    assert factory.created == []
    runner.scheduler_run_opts("fake")
    runner.scheduler_run_opts("fake")
    (sched,) = factory.created
    assert sched.session_name == "s"
    assert sched.kwargs["foo"] == "explicit"
    assert sched.kwargs["bar"] == 2
    assert sched.kwargs["trackers"] == "t1"
    assert sched.kwargs["lower"] == "x"


def test_unknown_scheduler_message_keeps_torchx_text_and_suggests(runner: Runner) -> None:
    with pytest.raises(UnknownSchedulerException) as info:
        runner.dryrun(make_app(), "fak")
    msg = str(info.value)
    assert msg.startswith(
        "Scheduler backend: fak does not exist. Use session.scheduler_backends() to see all"
        " supported schedulers"
    )
    assert "Did you mean `fake`?" in msg
    assert "fake, fake_ws" in msg


def test_close_and_context_manager(factory: Factory) -> None:
    with Runner("s", {"fake": factory}) as runner:
        runner.scheduler_run_opts("fake")
        assert "Runner(name=s, schedulers=" in repr(runner)
    assert factory.created[0].closed


# ------------------------------------------------------------------ dryrun


def test_dryrun_copies_validates_resolves_and_injects(
    runner: Runner, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHX_INTERNAL_SESSION_ID", "session-1")
    app = make_app()
    info = runner.dryrun(app, "fake", cfg={"n": 5, "unknown": "kept"})
    assert info._scheduler == "fake"
    assert info.request["cfg"] == {"foo": "bar", "n": 5, "unknown": "kept"}
    env = info.request["app"].roles[0].env
    assert env["TORCHX_JOB_ID"] == "fake://sess/${app_id}"
    assert env["TORCHX_INTERNAL_SESSION_ID"] == "session-1"
    assert "TORCHX_PARENT_RUN_ID" not in env
    assert "TORCHX_TRACKERS" not in env
    assert app.roles[0].env == {}, "the caller's AppDef must not be mutated"
    assert factory.created[0].calls == ["pre_build_validate", "validate", "submit_dryrun"]


def test_dryrun_shares_overrides(runner: Runner) -> None:
    overrides: dict[str, Any] = {"image": lambda: "resolved-image"}
    app = make_app(overrides=overrides)
    info = runner.dryrun(app, "fake")
    assert info.request["app"].roles[0].overrides is overrides


@pytest.mark.parametrize(
    ("app", "message"),
    [
        (AppDef("empty"), "No roles for app: empty. Did you forget to add roles to AppDef?"),
        (
            make_app(entrypoint=""),
            "No entrypoint for role: trainer. Did you forget to call role.runs(entrypoint, args,"
            " env)?",
        ),
        (
            make_app(num_replicas=0),
            "Non-positive replicas for role: trainer. Did you forget to set role.num_replicas?",
        ),
    ],
)
def test_dryrun_validation_messages(runner: Runner, app: AppDef, message: str) -> None:
    with pytest.raises(ValueError) as info:
        runner.dryrun(app, "fake")
    assert str(info.value) == message


def test_parent_run_id_env_beats_argument(runner: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    env = runner.dryrun(make_app(), "fake", parent_run_id="arg").request["app"].roles[0].env
    assert env["TORCHX_PARENT_RUN_ID"] == "arg"
    monkeypatch.setenv("TORCHX_PARENT_RUN_ID", "from-env")
    env = runner.dryrun(make_app(), "fake", parent_run_id="arg").request["app"].roles[0].env
    assert env["TORCHX_PARENT_RUN_ID"] == "from-env"


def test_trackers_come_from_the_runners_config(factory: Factory) -> None:
    text = "[torchx:tracker]\nfsspec =\nother =\n\n[tracker:fsspec]\nconfig = /cfg.txt\n"
    with Runner("s", {"fake": factory}, config=TorchXConfig.from_text(text)) as runner:
        env = runner.dryrun(make_app(), "fake").request["app"].roles[0].env
    assert env["TORCHX_TRACKERS"] == "fsspec,other"
    assert env["TORCHX_TRACKER_FSSPEC_CONFIG"] == "/cfg.txt"
    assert "TORCHX_TRACKER_OTHER_CONFIG" not in env


def test_base_validate_rejects_null_resource(tmp_path: Path) -> None:
    class StrictScheduler(FakeScheduler):
        _validate = Scheduler._validate

    with Runner("s", {"strict": StrictScheduler}) as runner:
        app = AppDef("a", roles=[Role("r", "img", entrypoint="echo")])
        with pytest.raises(ValueError, match=r"No resource for role: r \(image: img\)"):
            runner.dryrun(app, "strict")


def test_workspace_argument_overrides_first_role_for_workspace_schedulers(
    runner: Runner, tmp_path: Path
) -> None:
    app = make_app()
    app.roles.append(Role("second", "img2", entrypoint="echo", workspace=Workspace({"/w2": ""})))
    info = runner.dryrun(app, "fake_ws", workspace=str(tmp_path))
    roles = info.request["app"].roles
    assert roles[0].workspace == Workspace({str(tmp_path): ""})
    assert [r.image for r in roles] == [f"built:{tmp_path}", "built:/w2"]
    sched = runner._scheduler("fake_ws")
    assert isinstance(sched, FakeScheduler)
    assert sched.calls == [
        "pre_build_validate",
        "build_workspace",
        "build_workspace",
        "validate",
        "submit_dryrun",
    ]


def test_workspace_is_ignored_for_other_schedulers(runner: Runner, tmp_path: Path) -> None:
    info = runner.dryrun(make_app(), "fake", workspace=str(tmp_path))
    role = info.request["app"].roles[0]
    assert role.workspace is None
    assert role.image == "img"


# ------------------------------------------------------------------ run & manage


def test_run_schedule_status_describe(runner: Runner, events: list[logging.LogRecord]) -> None:
    handle = runner.run(make_app("myapp"), "fake")
    assert handle == "fake://sess/myapp-0"
    assert _apis(events) == ["dryrun", "schedule", "run"]
    status = runner.status(handle)
    assert status is not None
    assert status.state == AppState.RUNNING
    assert status.ui_url == "fake://myapp-0"
    described = runner.describe(handle)
    assert described is not None
    assert described.name == "myapp"
    assert described.roles[0].env["TORCHX_JOB_ID"] == "fake://sess/${app_id}"
    assert "Runner(name=sess" in repr(runner) and "myapp-0" in repr(runner)


def test_run_with_dryrun_returns_info(runner: Runner) -> None:
    info = runner.run(make_app(), "fake", dryrun=True)
    assert isinstance(info, AppDryRunInfo)
    assert runner.list("fake") == []


def test_describe_rebuilds_apps_not_submitted_here(runner: Runner, factory: Factory) -> None:
    handle = runner.run(make_app("x"), "fake")
    other = Runner("sess", {"fake": lambda *a, **k: factory.created[0]})
    described = other.describe(handle)
    assert described == AppDef(
        "x-0", roles=[Role("described", "img")], metadata={"from": "describe"}
    )
    assert other.describe("fake://sess/missing") is None


def test_wait_uses_wait_for_change(runner: Runner, factory: Factory) -> None:
    handle = runner.run(make_app("w"), "fake")
    status = runner.wait(handle, wait_interval=0.5)
    assert status is not None and status.state == AppState.SUCCEEDED
    assert factory.created[0].waits == [("w-0", 0.5)]
    assert runner.wait("fake://sess/missing") is None


def test_status_of_missing_app_is_none_and_evicts(runner: Runner, factory: Factory) -> None:
    handle = runner.run(make_app("gone"), "fake")
    del factory.created[0].apps["gone-0"]
    assert runner.status(handle) is None
    assert handle not in repr(runner)


def test_cancel_only_non_terminal_apps(runner: Runner, factory: Factory) -> None:
    handle = runner.run(make_app("c"), "fake")
    runner.cancel(handle)
    runner.cancel(handle)
    runner.cancel("fake://sess/missing")
    assert factory.created[0].calls.count("cancel:c-0") == 1
    status = runner.status(handle)
    assert status is not None and status.state == AppState.CANCELLED


def test_stop_is_deprecated_cancel(runner: Runner, factory: Factory) -> None:
    handle = runner.run(make_app("s"), "fake")
    with pytest.warns(PendingDeprecationWarning, match="please use `cancel` instead"):
        runner.stop(handle)
    assert "cancel:s-0" in factory.created[0].calls


def test_delete_existing_apps_only(runner: Runner, factory: Factory) -> None:
    handle = runner.run(make_app("d"), "fake")
    runner.delete(handle)
    runner.delete(handle)
    assert factory.created[0].calls.count("delete:d-0") == 1
    assert runner.status(handle) is None


def test_log_lines(runner: Runner) -> None:
    handle = runner.run(make_app("l"), "fake")
    assert list(runner.log_lines(handle, "trainer", k=1)) == ["trainer/1: line\n"]
    with pytest.raises(UnknownAppException):
        runner.log_lines("fake://sess/missing", "trainer")


def test_list_fills_handles(runner: Runner, events: list[logging.LogRecord]) -> None:
    runner.run(make_app("a"), "fake")
    runner.run(make_app("b"), "fake")
    apps = runner.list("fake")
    assert [a.app_handle for a in apps] == ["fake://sess/a-0", "fake://sess/b-1"]
    assert _apis(events)[-1] == "list"


def test_cfg_from_str_merges_left_to_right(runner: Runner) -> None:
    assert runner.cfg_from_str("fake", "foo=a,n=2", "n=3") == {"foo": "a", "n": 3}
    assert [name for name, _ in runner.scheduler_run_opts("fake")] == ["foo", "n"]


def test_events_capture_exceptions(runner: Runner, events: list[logging.LogRecord]) -> None:
    import json

    with pytest.raises(UnknownSchedulerException):
        runner.status("nope://sess/app")
    assert events == []  # the scheduler lookup happens before the event block
    with pytest.raises(UnknownAppException):
        runner.log_lines("fake://sess/missing", "r")
    last = json.loads(events[-1].getMessage())
    assert last["api"] == "log_lines"
    assert last["exception_type"] == "UnknownAppException"
    assert last["app_id"] == "missing"
