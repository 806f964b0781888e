from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import pytest

from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
    StructuredOpts,
    filter_regex,
    split_lines,
    split_lines_iterator,
)
from torchx.specs.api import (
    NONE,
    NULL_RESOURCE,
    AppDef,
    AppDryRunInfo,
    AppState,
    CfgVal,
    InvalidRunConfigException,
    Resource,
    Role,
)


@dataclass
class _Sub(StructuredOpts):
    depth: int = 1
    """how deep"""


@dataclass
class _Opts(StructuredOpts):
    queue: str
    """the queue to use"""
    log_dir: Optional[str] = None
    """where logs go"""
    tags: list[str] = field(default_factory=list)
    image_repo: str = field(default="r", metadata={"cfg_key": "repo", "help": "explicit help"})
    sub: _Sub = field(default_factory=_Sub)


def test_structured_opts_as_runopts() -> None:
    opts = _Opts.as_runopts()
    names = [name for name, _ in opts]
    assert names == ["queue", "log_dir", "tags", "repo", "sub.depth"]
    queue = opts.get("queue")
    assert queue is not None and queue.is_required and queue.help == "the queue to use"
    log_dir = opts.get("log_dir")
    assert log_dir is not None and log_dir.opt_type is str and log_dir.default is None
    repo = opts.get("repo")
    assert repo is not None and repo.help == "explicit help" and repo.default == "r"
    depth = opts.get("sub.depth")
    assert depth is not None and depth.default == 1 and depth.help == "how deep"


def test_structured_opts_from_cfg_aliases_and_mapping() -> None:
    opts = _Opts.from_cfg({"queue": "q", "logDir": "/l", "repo": "x", "sub.depth": 3})
    assert opts.queue == "q" and opts.log_dir == "/l" and opts.image_repo == "x"
    assert opts.sub.depth == 3
    assert opts["logDir"] == "/l" and opts.get("log_dir") == "/l"
    assert opts.get("missing", "d") == "d"
    assert dict(opts) == {"queue": "q", "log_dir": "/l", "tags": [], "repo": "x", "sub.depth": 3}
    merged = opts | {"queue": "other"}
    assert merged["queue"] == "other" and merged["repo"] == "x"


def test_structured_opts_required_missing() -> None:
    with pytest.raises(InvalidRunConfigException, match="Required run option: queue"):
        _Opts.from_cfg({})


def test_response_defaults_and_hash() -> None:
    resp = DescribeAppResponse()
    assert resp.app_id == "<NOT_SET>" and resp.state == AppState.UNSUBMITTED
    assert resp.num_restarts == -1 and resp.msg == NONE and resp.roles_statuses == []
    a = ListAppResponse("a", AppState.RUNNING)
    assert a.app_handle == "<NOT_SET>" and a.name == ""
    assert hash(a) == hash(ListAppResponse("a", AppState.RUNNING, name="other"))
    assert len({a, ListAppResponse("a", AppState.RUNNING)}) == 1
    assert Stream("stderr") is Stream.STDERR and Stream.COMBINED.value == "combined"


def test_line_helpers() -> None:
    assert split_lines("a\nb\n\nc") == ["a\n", "b\n", "\n", "c"]
    assert split_lines("") == []
    assert list(split_lines_iterator(["a", "b\nc", "\n", "d"])) == ["ab\n", "c\n", "d"]
    assert list(filter_regex("^x", ["x1\n", "yx\n", "x2\n"])) == ["x1\n", "x2\n"]


class _Fake(Scheduler[Mapping[str, CfgVal]]):
    def __init__(self) -> None:
        super().__init__("fake", "sess")
        self.apps: dict[str, AppState] = {}
        self.cancelled: list[str] = []

    def _run_opts(self) -> Any:
        return _Opts.as_runopts()

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        return AppDryRunInfo({"name": app.name, "cfg": dict(cfg)}, repr)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        self.apps[dryrun_info.request["name"]] = AppState.RUNNING
        return str(dryrun_info.request["name"])

    def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
        if app_id not in self.apps:
            return None
        return DescribeAppResponse(app_id=app_id, state=self.apps[app_id])

    def list(self, cfg: Optional[Mapping[str, CfgVal]] = None) -> list[ListAppResponse]:
        return [ListAppResponse(a, s) for a, s in self.apps.items()]

    def _cancel_existing(self, app_id: str) -> None:
        self.cancelled.append(app_id)


class _TaggingRole(Role):
    def pre_proc(self, scheduler: str, dryrun_info: AppDryRunInfo[Any]) -> AppDryRunInfo[Any]:
        dryrun_info.request["pre_proc"] = scheduler
        return dryrun_info


def test_submit_dryrun_resolves_and_runs_pre_proc() -> None:
    sched = _Fake()
    app = AppDef("app", roles=[_TaggingRole("r", "img", entrypoint="echo")])
    info = sched.submit_dryrun(app, {"queue": "q"})
    assert info.request["pre_proc"] == "fake"
    assert info.request["cfg"]["queue"] == "q" and info.request["cfg"]["repo"] == "r"
    assert info.app is app and info.cfg["queue"] == "q"
    with pytest.raises(InvalidRunConfigException):
        sched.submit_dryrun(app, {})


def test_submit_cancel_delete_exists(caplog: pytest.LogCaptureFixture) -> None:
    sched = _Fake()
    app = AppDef("app", roles=[Role("r", "img", entrypoint="echo", resource=Resource(1, 0, 1))])
    assert sched.submit(app, {"queue": "q"}) == "app"
    assert sched.exists("app") and not sched.exists("nope")
    sched.cancel("nope")
    sched.cancel("app")
    sched.delete("app")
    assert sched.cancelled == ["app", "app"]
    # one preparation path with Runner.dryrun: a workspace the scheduler cannot use is
    # ignored with a warning (as TorchX's Runner does), never silently
    with caplog.at_level(logging.WARNING, logger="torchx.schedulers.api"):
        assert sched.submit(app, {"queue": "q"}, workspace="/tmp") == "app"
    assert "scheduler `fake` does not support workspaces: ignoring workspace `/tmp`" in caplog.text
    with pytest.raises(ValueError, match=r"No resource for role: r \(image: img\)"):
        sched.submit(AppDef("bad", roles=[Role("r", "img", entrypoint="echo")]), {"queue": "q"})


def test_default_log_iter_validate_and_wait() -> None:
    sched = _Fake()
    with pytest.raises(NotImplementedError, match="_Fake does not support application log"):
        sched.log_iter("a", "r")
    with pytest.raises(ValueError, match=r"No resource for role: r \(image: img\)"):
        sched._validate(AppDef("a", roles=[Role("r", "img", resource=NULL_RESOURCE)]), "fake", {})
    sched._validate(AppDef("a", roles=[Role("r", "img", resource=Resource(1, 0, 1))]), "fake", {})
    # the base has no way to see a change: it blocks for the whole timeout (a lower bound, so
    # not a speed check), and a negative timeout is no error
    start = time.monotonic()
    sched.wait_for_change("app", 0.05)
    assert time.monotonic() - start >= 0.05
    sched.wait_for_change("app", -1.0)
