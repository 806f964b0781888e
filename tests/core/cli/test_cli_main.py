"""Tests for torchx.cli.main: parser, lazy loading, plugin commands, the error handler."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import run_torchx as torchx
from _support import write_dist

from torchx.cli import main as cli_main
from torchx.cli.cmd_base import SubCommand

HEAVY = {
    "torchx.runner",
    "torchx.schedulers",
    "torchx.specs",
    "torchx.components",
    "torchx.workspace",
    "torchx.tracker",
    "yaml",
    "docstring_parser",
    "fsspec",
    "tabulate",
    "kubernetes",
    "docker",
    "airflow",
    "kfp",
    "pydantic",
    "torch",
}


def test_help_lists_every_default_command() -> None:
    proc = torchx("--help")
    assert proc.returncode == 0, proc.stderr
    for name in cli_main.get_default_sub_cmds():
        assert name in proc.stdout
    assert "Traceback" not in proc.stderr


def test_help_imports_nothing_heavy() -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "torchx.cli.main", "--help"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    imported = {
        line.split("|")[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "torchx.cli._lazy" in imported
    heavy = {m for m in imported if m in HEAVY or m.split(".")[0] in HEAVY - {"torchx"}}
    heavy |= {m for m in imported if any(m.startswith(h + ".") for h in HEAVY if "." in h)}
    assert not heavy, f"`torchx --help` imported {sorted(heavy)}"
    # no sub-command module is imported for the top-level help
    assert not {
        m for m in imported if m.startswith("torchx.cli.cmd_") and m != "torchx.cli.cmd_base"
    }


def test_version() -> None:
    from torchx.version import __version__

    proc = torchx("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"torchx-{__version__}"


def test_no_subcommand_prints_help_and_exits_1() -> None:
    proc = torchx()
    assert proc.returncode == 1
    assert "usage: torchx" in proc.stdout


def test_unknown_subcommand_is_usage_error() -> None:
    proc = torchx("stauts")
    assert proc.returncode == 2
    assert "invalid choice: 'stauts'" in proc.stderr
    assert "status" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_log_level_is_usage_error() -> None:
    proc = torchx("--log_level", "LOUD", "builtins")
    assert proc.returncode == 2
    assert "invalid log level `LOUD`" in proc.stderr


def test_subcommand_help_builds_only_that_command() -> None:
    proc = torchx("describe", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "app_handle" in proc.stdout


def test_default_sub_cmds_are_lazy_and_loadable() -> None:
    cmds = cli_main.get_default_sub_cmds()
    assert set(cmds) >= {
        "builtins",
        "cancel",
        "configure",
        "delete",
        "describe",
        "list",
        "log",
        "run",
        "runopts",
        "status",
    }
    from torchx.cli.cmd_run import CmdBuiltins, CmdRun
    from torchx.cli.cmd_status import CmdStatus

    assert all(isinstance(c, SubCommand) for c in cmds.values())
    assert isinstance(cmds["run"].load(), CmdRun)  # type: ignore[attr-defined]
    assert isinstance(cmds["builtins"].load(), CmdBuiltins)  # type: ignore[attr-defined]
    assert isinstance(cmds["status"].load(), CmdStatus)  # type: ignore[attr-defined]


class _Recorder(SubCommand):
    """Records its parsed arguments."""

    def __init__(self) -> None:
        self.added = 0
        self.args: argparse.Namespace | None = None

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        self.added += 1
        subparser.add_argument("--flag", default="x")

    def run(self, args: argparse.Namespace) -> None:
        self.args = args


class _Raiser(SubCommand):
    """Raises the exception it was built with."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        pass

    def run(self, args: argparse.Namespace) -> None:
        raise self.exc


def test_create_parser_adds_arguments_only_for_the_selected_command() -> None:
    used, unused = _Recorder(), _Recorder()
    parser = cli_main.create_parser({"used": used, "unused": unused})
    args = parser.parse_args(["used", "--flag", "y"])
    args.func(args)
    assert used.added == 1 and unused.added == 0
    assert used.args is not None and used.args.flag == "y"


def test_sub_parsers_are_created_only_when_selected() -> None:
    used, unused = _Recorder(), _Recorder()
    parser = cli_main.create_parser({"used": used, "unused": unused})
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    created = {k for k, v in action.choices.items() if isinstance(v, argparse.ArgumentParser)}
    assert created == set()  # `torchx --help` needs only the names and their help
    assert "used" in parser.format_help() and "unused" in parser.format_help()
    parser.parse_args(["used"])
    created = {k for k, v in action.choices.items() if isinstance(v, argparse.ArgumentParser)}
    assert created == {"used"}
    with pytest.raises(argparse.ArgumentError, match="conflicting subparser: used"):
        action.add_command("used", used, "again")  # type: ignore[attr-defined]
    with pytest.raises(SystemExit):
        parser.parse_args(["nope"])  # still an invalid choice


def test_run_main_runs_the_command_with_log_level() -> None:
    rec = _Recorder()
    cli_main.run_main({"rec": rec}, ["--log_level", "WARNING", "rec"])
    assert rec.args is not None and rec.args.log_level == "WARNING"


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            KeyError("No named resource found for `gpu.smal`. Did you mean `gpu.small`?"),
            "torchx: error: No named resource found for `gpu.smal`. Did you mean `gpu.small`?",
        ),
        (ValueError("bad value", "try again"), "torchx: error: bad value try again"),
        (FileNotFoundError("foo.py does not exist"), "torchx: error: foo.py does not exist"),
    ],
)
def test_run_main_turns_user_errors_into_one_line(
    exc: Exception,
    expected: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LOGLEVEL", raising=False)
    with pytest.raises(SystemExit) as e:
        cli_main.run_main({"boom": _Raiser(exc)}, ["boom"])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert err.strip() == expected
    assert "Traceback" not in err


def test_run_main_unexpected_error_names_its_type(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOGLEVEL", raising=False)
    with pytest.raises(SystemExit) as e:
        cli_main.run_main({"boom": _Raiser(AttributeError("nope"))}, ["boom"])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert "torchx: error: AttributeError: nope" in err
    assert "Traceback" not in err


def test_run_main_debug_prints_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli_main.run_main({"boom": _Raiser(ValueError("bad"))}, ["--log_level", "DEBUG", "boom"])
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "torchx: error: bad" in err


def test_run_main_keyboard_interrupt_exits_130(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        cli_main.run_main({"boom": _Raiser(KeyboardInterrupt())}, ["boom"])
    assert e.value.code == 130
    assert "Traceback" not in capsys.readouterr().err


# ------------------------------------------------------------------ plugin commands


def _write_plugin(root: Path, entry_points: dict[str, str]) -> None:
    (root / "my_torchx_plugin.py").write_text(
        "import argparse\n"
        "from torchx.cli.cmd_base import SubCommand\n\n"
        "class Hello(SubCommand):\n"
        '    """Says hello from a plugin."""\n\n'
        "    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:\n"
        '        subparser.add_argument("--who", default="world")\n\n'
        "    def run(self, args: argparse.Namespace) -> None:\n"
        '        print(f"hello {args.who}")\n\n'
        "class NotACommand:\n"
        "    pass\n"
    )
    write_dist(root, "my_torchx_plugin", {"torchx.cli.cmds": entry_points})


def test_plugin_command_from_entry_point(tmp_path: Path) -> None:
    _write_plugin(
        tmp_path,
        {"hello": "my_torchx_plugin:Hello", "status": "my_torchx_plugin:Hello"},
    )
    env = {"PYTHONPATH": str(tmp_path)}
    proc = torchx("hello", "--who", "plugin", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "hello plugin"
    # a plugin with a builtin's name overrides it
    proc = torchx("status", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "hello world"
    helptext = torchx("--help", env=env).stdout
    assert "hello" in helptext and "Says hello from a plugin." in helptext


def test_plugin_that_is_not_a_subcommand_is_one_line_error(tmp_path: Path) -> None:
    _write_plugin(tmp_path, {"bad": "my_torchx_plugin:NotACommand"})
    proc = torchx("builtins", env={"PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 1
    assert "torchx: error: entry point `bad` of group `torchx.cli.cmds`" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_get_sub_cmds_merges_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    rec = _Recorder()
    monkeypatch.setattr(cli_main, "load_group", lambda group, default=None: {"run": lambda: rec})
    cmds = cli_main.get_sub_cmds()
    assert cmds["run"] is rec
    assert "status" in cmds


def test_load_group_without_declaring_distribution_returns_default() -> None:
    assert cli_main.load_group("torchx.cli.cmds.none-declares-this", default={}) == {}
