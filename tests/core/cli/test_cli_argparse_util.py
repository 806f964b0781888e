"""Tests for torchx.cli.argparse_util and the log line helpers."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from torchx.cli.argparse_util import (
    ArgOnceAction,
    torchxconfig,
    torchxconfig_list,
    torchxconfig_run,
)
from torchx.specs.api import AppDef, Role
from torchx.util.log_tee_helpers import _find_role_replicas, _prefix_line


def test_arg_once_action_accepts_one_value() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-cfg", action=ArgOnceAction, default=None)
    assert parser.parse_args(["-cfg", "a=b"]).cfg == "a=b"
    assert parser.parse_args([]).cfg is None


def test_arg_once_action_rejects_repeats(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-cfg", "--scheduler_args", action=ArgOnceAction, default=None)
    with pytest.raises(SystemExit) as e:
        parser.parse_args(["-cfg", "a=b", "--scheduler_args", "c=d"])
    assert e.value.code == 1
    msg = "`--scheduler_args` is specified more than once"
    assert msg in capsys.readouterr().err + caplog.text


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cfg = tmp_path / ".torchxconfig"
    cfg.write_text(
        "[cli:run]\nscheduler = local_cwd\nworkspace =\n\n[cli:list]\nscheduler = kubernetes\n"
    )
    monkeypatch.setenv("TORCHXCONFIG", str(cfg))
    return cfg


def test_torchxconfig_reads_defaults(config: Path) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-s", "--scheduler", dest="scheduler", action=torchxconfig_run, default="x")
    parser.add_argument("--workspace", action=torchxconfig_run, default="/cwd")
    parser.add_argument("--other", action=torchxconfig_run, default="d")
    args = parser.parse_args([])
    assert (args.scheduler, args.workspace, args.other) == ("local_cwd", "", "d")
    assert parser.parse_args(["-s", "slurm"]).scheduler == "slurm"


def test_torchxconfig_list_section_and_required(config: Path) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scheduler", action=torchxconfig_list, required=True)
    assert parser.parse_args([]).scheduler == "kubernetes"
    generic = argparse.ArgumentParser()
    generic.add_argument("--scheduler", action=torchxconfig, subcmd="list")
    assert generic.parse_args([]).scheduler == "kubernetes"


def test_torchxconfig_missing_file_raises(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TORCHXCONFIG", str(tmp_path / "nope"))
    parser = argparse.ArgumentParser()
    with pytest.raises(FileNotFoundError, match="does not exist or is not a file"):
        parser.add_argument("--scheduler", action=torchxconfig_run)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("hello\n", "p hello\n"),
        ("a\nb\n", "p a\np b\n"),
        ("10%\r20%\r30%\n", "p 10%\rp 20%\rp 30%\n"),
        ("no newline", "p no newline"),
        ("\n", "p \n"),
    ],
)
def test_prefix_line(line: str, expected: str) -> None:
    assert _prefix_line("p ", line) == expected


def test_find_role_replicas() -> None:
    app = AppDef(
        "app",
        roles=[Role("a", "img", num_replicas=2), Role("b", "img", num_replicas=1)],
    )
    assert _find_role_replicas(app, None) == [("a", 0), ("a", 1), ("b", 0)]
    assert _find_role_replicas(app, "b") == [("b", 0)]
    assert _find_role_replicas(app, "c") == []
