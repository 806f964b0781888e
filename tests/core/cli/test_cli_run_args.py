"""Tests for the argument handling of `torchx run` (torchx.cli.cmd_run / _run_args)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from torchx.cli.cmd_run import (
    TorchXRunArgs,
    _parse_component_name_and_args,
    torchx_run_args_from_argparse,
    torchx_run_args_from_json,
)


@pytest.fixture
def parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog="torchx run")


def test_component_name_and_args(parser: argparse.ArgumentParser) -> None:
    assert _parse_component_name_and_args(["utils.echo", "--msg", "hi"], parser) == (
        "utils.echo",
        ["--msg", "hi"],
    )
    assert _parse_component_name_and_args(["--", "utils.echo", "--msg", "hi"], parser) == (
        "utils.echo",
        ["--msg", "hi"],
    )


def test_component_from_torchxconfig(
    parser: argparse.ArgumentParser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / ".torchxconfig"
    cfg.write_text("[cli:run]\ncomponent = utils.echo\n")
    monkeypatch.setenv("TORCHXCONFIG", str(cfg))
    assert _parse_component_name_and_args(["--msg", "hi"], parser) == (
        "utils.echo",
        ["--msg", "hi"],
    )
    assert _parse_component_name_and_args([], parser) == ("utils.echo", [])


def test_missing_component_is_usage_error(
    parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        _parse_component_name_and_args(["--msg", "hi"], parser)
    assert e.value.code == 2
    assert (
        "missing component name, either provide it from the CLI or in .torchxconfig"
        in capsys.readouterr().err
    )


def test_repeated_arguments_are_usage_error(
    parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        _parse_component_name_and_args(["utils.echo", "--msg", "a", "--msg=b"], parser)
    assert e.value.code == 2
    assert "Repeated Command Line Arguments: ['--msg']" in capsys.readouterr().err


def test_repeats_in_separate_dash_dash_groups_are_fine(parser: argparse.ArgumentParser) -> None:
    args = ["dist.ddp", "--script", "a.py", "--", "--script", "b", "-1", "-1"]
    assert _parse_component_name_and_args(args, parser) == ("dist.ddp", args[1:])


def test_run_args_from_json_defaults() -> None:
    run_args = torchx_run_args_from_json(
        {"component_name": "utils.echo", "scheduler": "local_cwd", "scheduler_args": {}}
    )
    # as TorchX: the default workspace is the current directory, spelled out
    assert run_args == TorchXRunArgs("utils.echo", "local_cwd", {}, workspace=os.getcwd())
    assert run_args.component_args_str == []
    assert not (run_args.dryrun or run_args.wait or run_args.log or run_args.tee_logs)


def test_run_args_from_json_missing_fields() -> None:
    with pytest.raises(
        ValueError, match="The following required fields are missing: scheduler, scheduler_args"
    ):
        torchx_run_args_from_json({"component_name": "utils.echo"})


def test_run_args_from_json_extra_fields() -> None:
    with pytest.raises(ValueError) as e:
        torchx_run_args_from_json(
            {"component_name": "c", "scheduler": "s", "scheduler_args": {}, "bogus": 1, "x": 2}
        )
    assert e.value.args[0] == "The following fields are not part of the run command: bogus, x."


def test_run_args_from_json_wrong_type() -> None:
    with pytest.raises(
        ValueError, match="field `scheduler_args` of the run command must be an object"
    ):
        torchx_run_args_from_json(
            {"component_name": "c", "scheduler": "s", "scheduler_args": "a=b"}
        )


def test_run_args_from_argparse() -> None:
    ns = argparse.Namespace(
        scheduler="local_cwd",
        dryrun=True,
        wait=False,
        log=True,
        workspace="",
        parent_run_id="p1",
        tee_logs=False,
    )
    run_args = torchx_run_args_from_argparse(ns, "utils.echo", ["--msg", "x"], {"log_dir": "/t"})
    assert run_args == TorchXRunArgs(
        component_name="utils.echo",
        scheduler="local_cwd",
        scheduler_args={},
        scheduler_cfg={"log_dir": "/t"},
        dryrun=True,
        log=True,
        workspace=None,  # an empty `[cli:run] workspace =` disables the workspace
        parent_run_id="p1",
        component_args_str=["--msg", "x"],
    )


def test_run_args_from_json_startup_timeout() -> None:
    base = {"component_name": "c", "scheduler": "s", "scheduler_args": {}}
    assert torchx_run_args_from_json({**base, "startup_timeout": 30}).startup_timeout == 30
    assert torchx_run_args_from_json({**base, "startup_timeout": None}).startup_timeout is None
    for bad in (True, "30"):
        with pytest.raises(ValueError) as e:
            torchx_run_args_from_json({**base, "startup_timeout": bad})
        assert e.value.args[0] == (
            f"field `startup_timeout` of the run command must be a number or null, got {bad!r}"
        )
    with pytest.raises(ValueError, match="field `startup_timeout` must be >= 0 seconds, got -1"):
        torchx_run_args_from_json({**base, "startup_timeout": -1})
