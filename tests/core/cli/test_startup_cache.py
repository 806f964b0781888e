"""The one start-up cache: ``--help``, ``builtins`` and ``runopts`` stay warm across commands.

Every command runs as a real ``torchx`` subprocess. Whether an answer came from the cache is
read from what the process imported (``PYTHONPROFILEIMPORTTIME``), never from its time: a
served ``torchx builtins`` imports no component module, argparse or ``torchx.specs``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from _support import run_torchx as torchx
from _support import write_dist

COMPONENT = '''
from torchx import specs


def hello(msg: str = "hi") -> specs.AppDef:
    """A component.

    Args:
        msg: the message
    """
    return specs.AppDef(name="x", roles=[specs.Role("r", "img", entrypoint="echo", args=[msg])])
'''
SECRET = "startup-cache-secret-value-7f3a"


def _imports(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> set[str]:
    """Runs ``torchx *args`` and returns the modules it imported (exit 0 asserted)."""
    proc = torchx(*args, env={"PYTHONPROFILEIMPORTTIME": "1", **(env or {})}, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    } - {"package"}


def _served(modules: set[str]) -> bool:
    """Whether a run that imported ``modules`` was answered from the cache."""
    heavy = {"argparse", "torchx.specs", "torchx.schedulers", "torchx.cli.cmd_base"}
    return not (heavy & modules) and not any(m.startswith("torchx.components") for m in modules)


def _cache_files() -> list[Path]:
    return sorted((Path(os.environ["TORCHX_HOME"]) / "cache").glob("startup-*.txt"))


def _backdate(*roots: Path, age: float = 60.0) -> None:
    stamp = time.time() - age
    for root in roots:
        for path in [root, *root.rglob("*")]:
            os.utime(path, (stamp, stamp))


def test_run_then_builtins_is_served_from_the_cache(tmp_path: Path) -> None:
    builtins = torchx("builtins")  # cold: discovers the components and stores them
    assert builtins.returncode == 0, builtins.stderr
    assert not _served(_imports("runopts", "local_cwd"))  # cold, stored beside them
    assert not _served(_imports("--help"))
    run = torchx("run", "-s", "local_cwd", "utils.sh", "echo", "hi", cwd=tmp_path)
    assert run.returncode == 0 and "sh/0 hi" in run.stdout + run.stderr, run.stderr
    modules = _imports("builtins", cwd=tmp_path)
    assert _served(modules), sorted(m for m in modules if m.startswith(("torchx", "arg")))
    assert _served(_imports("runopts", "local_cwd"))
    assert _served(_imports("--help"))
    assert torchx("builtins").stdout == builtins.stdout
    assert len(_cache_files()) == 1  # one file holds every answer


def test_commands_keep_each_others_answers_in_any_order() -> None:
    for args in (["runopts", "local_cwd"], ["builtins"], ["--help"], ["runopts"]):
        assert not _served(_imports(*args))
    for args in (["builtins"], ["runopts"], ["--help"], ["runopts", "local_cwd"], ["builtins"]):
        assert _served(_imports(*args)), args


def test_served_runopts_prints_what_the_command_printed() -> None:
    for args in (["runopts"], ["runopts", "local_cwd"], ["runopts", "slurm"]):
        first = torchx(*args)
        again = torchx(*args)
        assert first.returncode == again.returncode == 0, first.stderr
        assert again.stdout == first.stdout and again.stderr == ""


def test_a_changed_component_drops_only_its_section(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "flowcomps").mkdir(parents=True)
    (site / "flowcomps" / "__init__.py").write_text("")
    module = site / "flowcomps" / "a.py"
    module.write_text(COMPONENT)
    write_dist(site, "flowcomps", {"torchx.components": {"my": "flowcomps"}})
    _backdate(site)
    env = {"PYTHONPATH": str(site)}
    assert torchx("builtins", env=env).stdout.endswith("my.a.hello\n")
    assert not _served(_imports("runopts", "local_cwd", env=env))
    assert _served(_imports("builtins", env=env))
    module.write_text(COMPONENT.replace("hello", "howdy"))
    _backdate(module, age=30)
    assert not _served(_imports("builtins", env=env))  # discovered again
    assert _served(_imports("runopts", "local_cwd", env=env))  # its section was kept
    assert torchx("builtins", env=env).stdout.endswith("my.a.howdy\n")


def test_a_cli_plugin_turns_the_cache_off(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _backdate(site)
    env = {"PYTHONPATH": str(site)}
    torchx("builtins", env=env)
    assert _served(_imports("builtins", env=env))
    (site / "my_builtins.py").write_text(
        "import argparse\n"
        "from torchx.cli.cmd_base import SubCommand\n\n"
        "class Mine(SubCommand):\n"
        "    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:\n"
        "        pass\n\n"
        "    def run(self, args: argparse.Namespace) -> None:\n"
        "        print('the plugin builtins')\n"
    )
    write_dist(site, "my_builtins", {"torchx.cli.cmds": {"builtins": "my_builtins:Mine"}})
    _backdate(site)
    for _ in range(2):  # the plugin's command, and nothing stored that would hide it
        assert torchx("builtins", env=env).stdout == "the plugin builtins\n"


def test_the_cache_holds_no_environment_value(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"MY_TOKEN": SECRET, "LANG": f"C.{SECRET}", "COLUMNS": "91"}
    for args in (["builtins"], ["runopts", "local_cwd"], ["--help"]):
        assert torchx(*args, env=env).returncode == 0
    (entry,) = _cache_files()
    text = entry.read_text()
    assert "section help width=91" in text and SECRET not in text


@pytest.mark.parametrize("args", [["runopts", "no_such_scheduler"], ["builtins", "--print", "x"]])
def test_failed_or_other_commands_store_nothing(args: list[str]) -> None:
    assert torchx(*args).returncode != 0
    assert all("section runopts" not in f.read_text() for f in _cache_files())


def test_output_with_a_warning_on_stderr_is_not_stored(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "warnsched.py").write_text(
        "import sys\n"
        "from torchx.schedulers.local_scheduler import create_scheduler as _create\n\n"
        "def create_scheduler(session_name, **kwargs):\n"
        "    print('warnsched: this scheduler is deprecated', file=sys.stderr)\n"
        "    return _create(session_name, **kwargs)\n"
    )
    write_dist(
        site, "warnsched", {"torchx.schedulers": {"warnsched": "warnsched:create_scheduler"}}
    )
    _backdate(site)
    env = {"PYTHONPATH": str(site)}
    for _ in range(2):  # the warning shows on every run: nothing stored that would hide it
        proc = torchx("runopts", "warnsched", env=env)
        assert proc.returncode == 0, proc.stderr
        assert "deprecated" in proc.stderr and "usage:" in proc.stdout
    assert all("section runopts warnsched" not in f.read_text() for f in _cache_files())
