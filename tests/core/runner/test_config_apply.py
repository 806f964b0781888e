""".torchxconfig scheduler sections: apply, load and dump against a fake scheduler."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import pytest

from torchx.runner import config
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.specs.api import AppDef, AppDryRunInfo, CfgVal, runopts


class OptsScheduler(Scheduler[Mapping[str, CfgVal]]):
    def __init__(self, session_name: str, **kwargs: Any) -> None:
        super().__init__("opts", session_name)

    def _run_opts(self) -> runopts:
        opts = runopts()
        opts.add("queue", type_=str, help="the queue to use " + "x" * 80, required=True)
        opts.add("count", type_=int, help="a count", default=2)
        opts.add("flag", type_=bool, help="a flag", default=False)
        opts.add("tags", type_=list[str], help="tags", default=["a", "b"])
        opts.add("env", type_=dict[str, str], help="env", default={"K": "v", "L": "w"})
        opts.add("path", type_=str, help="a path")
        opts.add("pct", type_=str, help="percent", default="50%")
        opts.add("dataLoader", type_=str, help="camel", default=None)
        return opts

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[None]:
        raise NotImplementedError

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        raise NotImplementedError

    def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
        return None

    def list(self, cfg: Optional[Mapping[str, CfgVal]] = None) -> list[ListAppResponse]:
        return []

    def _cancel_existing(self, app_id: str) -> None:
        pass


def _broken_factory(session_name: str, **kwargs: Any) -> Scheduler[Any]:
    raise ModuleNotFoundError("No module named 'docker'", name="docker")


@pytest.fixture(autouse=True)
def fake_factories(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        config,
        "get_scheduler_factories",
        lambda: {"opts": OptsScheduler, "broken": _broken_factory},
    )


def test_load_casts_values_and_keeps_existing_keys(caplog: pytest.LogCaptureFixture) -> None:
    f = io.StringIO(
        "[opts]\nqueue = q1\ncount = 7\nflag = yes\ntags = x,y;z\nenv = A:1,B:2\npath = None\n"
        "typo = 1\n[other]\ncount = 9\n"
    )
    cfg: dict[str, CfgVal] = {"count": 1}
    config.load("opts", f, cfg)
    assert cfg == {
        "count": 1,
        "queue": "q1",
        "flag": True,
        "tags": ["x", "y", "z"],
        "env": {"A": "1", "B": "2"},
        "path": None,
    }
    assert (
        "`typo = 1` was declared in the [opts] section of the config file but is not a runopt of"
        " `opts` scheduler, remove the entry from the config file to no longer see this warning"
    ) in caplog.text


def test_load_rejects_bad_bool() -> None:
    with pytest.raises(ValueError, match="is not a valid bool literal"):
        config.load("opts", io.StringIO("[opts]\nflag = maybe\n"), {})


def test_load_unknown_scheduler() -> None:
    with pytest.raises(ValueError) as info:
        config.load("optz", io.StringIO("[optz]\nx = 1\n"), {})
    assert str(info.value).startswith(
        "`optz` is not a registered scheduler. Valid scheduler names: ['opts', 'broken']"
    )
    assert "Did you mean `opts`?" in str(info.value)


def test_apply_first_file_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    cwd = tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    (home / ".torchxconfig").write_text("[opts]\ncount = 10\n")
    (cwd / ".torchxconfig").write_text("[opts]\ncount = 20\nqueue = from-cwd\n")
    monkeypatch.delenv("TORCHXCONFIG", raising=False)
    monkeypatch.setattr(config, "DEFAULT_CONFIG_DIRS", [str(home), str(cwd)])
    cfg: dict[str, CfgVal] = {}
    config.apply("opts", cfg)
    assert cfg == {"count": 10, "queue": "from-cwd"}
    cfg = {"queue": "explicit"}
    config.apply("opts", cfg, dirs=[str(cwd)])
    assert cfg == {"queue": "explicit", "count": 20}


def test_apply_with_torchxconfig_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "my.ini"
    path.write_text("[opts]\nqueue = env-file\n")
    monkeypatch.setenv("TORCHXCONFIG", str(path))
    cfg: dict[str, CfgVal] = {}
    config.apply("opts", cfg)
    assert cfg == {"queue": "env-file"}
    monkeypatch.setenv("TORCHXCONFIG", "")
    cfg = {}
    config.apply("opts", cfg)
    assert cfg == {}


def test_dump_writes_defaults_and_fixmes(caplog: pytest.LogCaptureFixture) -> None:
    out = io.StringIO()
    config.dump(out)
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0] == "[opts]"
    fixme = "#FIXME:(str) the queue to use " + "x" * 80
    assert lines[1] == f"queue = {fixme[:60]}..."
    assert lines[2:9] == [
        "count = 2",
        "flag = False",
        "tags = a;b",
        "env = K:v;L:w",
        "path = None",
        "pct = 50%%",
        "dataLoader = None",
    ]
    assert "[broken]" not in text
    assert "skipping scheduler `broken`" in caplog.text
    # the dump loads back to the defaults
    cfg: dict[str, CfgVal] = {"queue": "q"}
    config.load("opts", io.StringIO(text), cfg)
    assert cfg["tags"] == ["a", "b"] and cfg["env"] == {"K": "v", "L": "w"}
    assert cfg["pct"] == "50%" and cfg["dataLoader"] is None


def test_dump_required_only_and_selected_schedulers() -> None:
    out = io.StringIO()
    config.dump(out, schedulers=["opts"], required_only=True)
    lines = [line for line in out.getvalue().splitlines() if line]
    assert lines[0] == "[opts]"
    assert len(lines) == 2 and lines[1].startswith("queue = #FIXME:(str)")
