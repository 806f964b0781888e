"""CLI behaviours TorchX's own code relies on: ``args.func`` on tracker subcommands,
``CmdBuiltins._builtins``, ``torchx list`` passing ``cfg=None`` when no option is set, and the
component-name cache surviving a module whose ``__path__`` is not a path list."""

from __future__ import annotations

import argparse
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from torchx.cli import _component_index
from torchx.cli.cmd_builtins import CmdBuiltins
from torchx.cli.cmd_list import CmdList
from torchx.cli.cmd_tracker import CmdTracker


@pytest.fixture
def tracker_parser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    cfg = tmp_path / ".torchxconfig"
    cfg.write_text(f"[torchx:tracker]\nfsspec =\n\n[tracker:fsspec]\nconfig = {tmp_path / 't'}\n")
    monkeypatch.setenv("TORCHXCONFIG", str(cfg))
    monkeypatch.delenv("TORCHX_TRACKERS", raising=False)
    parser = argparse.ArgumentParser()
    CmdTracker().add_arguments(parser)
    return parser


def test_tracker_subcommands_set_func(
    tracker_parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["list", "jobs"], ["list", "metadata", "r"], ["lineage", "r"]):
        assert callable(tracker_parser.parse_args(argv).func)
    args = tracker_parser.parse_args(["--json", "list", "jobs"])
    args.func(args)
    assert capsys.readouterr().out.strip() == "[]"


def test_tracker_lineage_without_run_id_is_a_usage_error(
    tracker_parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
) -> None:
    args = tracker_parser.parse_args(["list", "lineage"])
    with pytest.raises(SystemExit) as exit_info:
        args.func(args)
    assert exit_info.value.code == 2
    assert "lineage needs the RUN_ID" in capsys.readouterr().err


def test_builtins_returns_valid_components() -> None:
    builtins = CmdBuiltins()._builtins()
    assert "utils.echo" in builtins and "dist.ddp" in builtins
    assert all(not c.validation_errors for c in builtins.values())


def test_list_passes_none_without_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx.runner.api import Runner

    seen: list[Any] = []
    original = Runner.list

    def recording(self: Runner, scheduler: str, cfg: Any = None) -> Any:
        seen.append(cfg)
        return original(self, scheduler, cfg)

    monkeypatch.setattr(Runner, "list", recording)
    monkeypatch.setenv("TORCHXCONFIG", "")
    parser = argparse.ArgumentParser()
    CmdList().add_arguments(parser)
    CmdList().run(parser.parse_args(["-s", "local_cwd"]))
    CmdList().run(parser.parse_args(["-s", "local_cwd", "-cfg", "log_dir=/tmp"]))
    assert seen == [None, {"log_dir": "/tmp"}]


def test_component_index_skips_a_non_list_module_path(monkeypatch: pytest.MonkeyPatch) -> None:
    class NotAPath:
        def __iter__(self) -> Any:
            raise TypeError("'NotAPath' object is not iterable")

    odd = types.ModuleType("odd_namespace_for_test")
    odd.__path__ = NotAPath()  # type: ignore[assignment]
    monkeypatch.setitem(sys.modules, odd.__name__, odd)
    paths = list(_component_index._module_paths())
    assert paths  # the other modules are still listed


@pytest.fixture
def run_cmd() -> tuple[argparse.ArgumentParser, Any]:
    from torchx.cli.cmd_run import CmdRun

    parser = argparse.ArgumentParser(prog="torchx run")
    cmd = CmdRun()
    cmd.add_arguments(parser)
    return parser, cmd


@pytest.mark.parametrize(
    "argv",
    [
        ["--stdin", "utils.echo"],
        ["--stdin", "--wait"],
        ["--stdin", "--scheduler_args", "a=b"],
        ["--stdin", "--workspace", "/x"],
        ["--stdin", "--dryrun", "--log"],
    ],
)
def test_verify_no_extra_args_rejects(
    run_cmd: tuple[argparse.ArgumentParser, Any],
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser, cmd = run_cmd
    with pytest.raises(SystemExit) as exit_info:
        cmd.verify_no_extra_args(parser.parse_args(argv))
    assert exit_info.value.code == 2
    assert "when using --stdin" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--stdin"], ["--stdin", "--dryrun"], ["utils.echo", "--wait"]])
def test_verify_no_extra_args_accepts(
    run_cmd: tuple[argparse.ArgumentParser, Any], argv: list[str]
) -> None:
    parser, cmd = run_cmd
    cmd.verify_no_extra_args(parser.parse_args(argv))


def test_torchx_json_from_stdin(
    run_cmd: tuple[argparse.ArgumentParser, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import io

    parser, cmd = run_cmd
    args = parser.parse_args(["--stdin", "--dryrun"])
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"scheduler": "local_cwd"}'))
    assert cmd.torchx_json_from_stdin(args) == {"scheduler": "local_cwd", "dryrun": True}
    monkeypatch.setattr(sys, "stdin", io.StringIO("[1, 2]"))
    with pytest.raises(SystemExit) as exit_info:
        cmd.torchx_json_from_stdin(args)
    assert exit_info.value.code == 1
    assert "expected a JSON object" in capsys.readouterr().err


def test_cli_errors_exit_like_torchx_when_a_command_runs_directly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from torchx.cli._errors import CliError
    from torchx.cli._handler import handle_errors
    from torchx.cli.cmd_log import validate

    # TorchX's commands sys.exit(1) on these; calling ours directly raises a SystemExit too
    with pytest.raises(SystemExit) as exit_info:
        validate("local:///app_without_scheduler_session/")
    assert isinstance(exit_info.value, CliError) and exit_info.value.code == 1
    # ... and the CLI still prints the one line and exits with the error's code
    with pytest.raises(SystemExit) as exit_info, handle_errors([]):
        raise CliError("something is wrong; do this", exit_code=3)
    assert exit_info.value.code == 3
    assert capsys.readouterr().err == "torchx: error: something is wrong; do this\n"


def test_cli_section_is_read_once_per_subcommand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.cli.argparse_util import torchxconfig, torchxconfig_run

    def workspace_default() -> Any:
        parser = argparse.ArgumentParser()
        parser.add_argument("--workspace", action=torchxconfig_run, default="d")
        return parser.parse_args([]).workspace

    cfg = tmp_path / "a.torchxconfig"
    cfg.write_text("[cli:run]\nworkspace = one\n")
    monkeypatch.setenv("TORCHXCONFIG", str(cfg))
    torchxconfig._subcmd_configs.clear()
    assert workspace_default() == "one"
    cfg.write_text("[cli:run]\nworkspace = two\n")
    assert workspace_default() == "one"  # cached, as TorchX
    torchxconfig._subcmd_configs.clear()
    assert workspace_default() == "two"
    other = tmp_path / "b.torchxconfig"
    other.write_text("[cli:run]\n")
    monkeypatch.setenv("TORCHXCONFIG", str(other))
    assert workspace_default() == "d"  # another config location is read


def test_options_given_twice_exit_1_per_parse(
    run_cmd: tuple[argparse.ArgumentParser, Any],
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    parser, _ = run_cmd
    # --scheduler is a torchxconfig option: as TorchX, it may be given only once too
    for argv in (["-s", "local_cwd", "-s", "local_cwd"], ["-cfg", "a=b", "-cfg", "a=b"]):
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args([*argv, "utils.echo"])
        assert exit_info.value.code == 1
        said = capsys.readouterr().err + caplog.text  # a log line once logging is set up
        assert f"`{argv[0]}` is specified more than once" in said
        caplog.clear()
    # the state is per parse: the same parser parses again
    assert parser.parse_args(["-s", "local_cwd", "utils.echo"]).scheduler == "local_cwd"
    assert parser.parse_args(["-s", "local_docker", "utils.echo"]).scheduler == "local_docker"
