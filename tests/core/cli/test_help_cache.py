"""``torchx --help`` from the cached text: the same bytes as argparse, dropped when it changes.

The first ``torchx --help`` of a test (its own ``TORCHX_HOME``) is argparse's and stores the
text; the second is served from the cache. A *poisoned* entry (its text replaced) proves which
path answered. Files on a test's ``PYTHONPATH`` are backdated so that the entry is not refused
as racy (``RACY_SECONDS``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _support import run_torchx as torchx
from _support import write_dist

from torchx.cli import main as cli_main

POISON = "poisoned help\n"
PROBE = """\
import contextlib, io, json, runpy, sys
sys.argv = ["torchx", "--help"]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        runpy.run_module("torchx.cli.main", run_name="__main__")
    except SystemExit:
        pass
print(json.dumps([out.getvalue(), sorted(sys.modules)]))
"""


def _entries() -> list[Path]:
    """The start-up cache files (the help text is one of their sections)."""
    return sorted((Path(os.environ["TORCHX_HOME"]) / "cache").glob("startup-*.txt"))


def _help_texts(entry: Path) -> list[str]:
    data = entry.read_text()
    found = re.finditer(r"^section help .*\n(?:stat .*\n)*text (\d+)\n", data, re.M)
    return [data[m.end() : m.end() + int(m.group(1))] for m in found]


def _poison() -> None:
    head = re.compile(r"^section help .*\n(?:stat .*\n)*text (\d+)\n", re.M)
    for entry in _entries():
        data, pos = entry.read_text(), 0
        while (m := head.search(data, pos)) is not None:
            end = m.end() + int(m.group(1))
            data = data[: m.start(1)] + f"{len(POISON)}\n{POISON}" + data[end:]
            pos = m.start(1) + len(POISON)
        entry.write_text(data)


def _argparse_help(columns: int, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    return cli_main.create_parser(cli_main.get_sub_cmds()).format_help()


@pytest.mark.parametrize("columns", [80, 57, 200])
def test_cached_text_is_argparse_text(columns: int, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"COLUMNS": str(columns)}
    first = torchx("--help", env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout == _argparse_help(columns, monkeypatch)
    assert len(_entries()) == 1
    for flag in ("--help", "-h"):
        again = torchx(flag, env=env)
        assert (again.returncode, again.stdout, again.stderr) == (0, first.stdout, "")
    _poison()
    assert torchx("-h", env=env).stdout == POISON  # served from the cache
    assert torchx("--help", env={"COLUMNS": str(columns + 1)}).stdout != POISON  # another width


def test_cache_hit_imports_no_argparse(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"  # on sys.path ("" of ``python -c``): not recently changed
    cwd.mkdir()
    stamp = time.time() - 60
    os.utime(cwd, (stamp, stamp))

    def probe() -> tuple[str, set[str]]:
        out = subprocess.run(
            [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, cwd=cwd
        ).stdout
        text, modules = json.loads(out)
        return text, set(modules)

    first, before = probe()
    assert "argparse" in before
    again, modules = probe()
    assert again == first and "usage: torchx" in again
    assert {"argparse", "torchx.cli._lazy", "torchx.cli.cmd_base", "signal"} & modules == set()


def test_plugin_command_invalidates_and_shows(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    stamp = time.time() - 60
    os.utime(site, (stamp, stamp))
    env = {"PYTHONPATH": str(site)}
    plain = torchx("--help", env=env).stdout
    assert len(_entries()) == 1
    _poison()
    assert torchx("--help", env=env).stdout == POISON
    (site / "my_help_plugin.py").write_text(
        "import argparse\n"
        "from torchx.cli.cmd_base import SubCommand\n\n"
        "class Hello(SubCommand):\n"
        '    """Says hello from a plugin."""\n\n'
        "    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:\n"
        "        pass\n\n"
        "    def run(self, args: argparse.Namespace) -> None:\n"
        "        pass\n"
    )
    write_dist(site, "my_help_plugin", {"torchx.cli.cmds": {"hello": "my_help_plugin:Hello"}})
    with_plugin = torchx("--help", env=env)
    assert with_plugin.returncode == 0, with_plugin.stderr
    assert "Says hello from a plugin." in with_plugin.stdout and "hello" in with_plugin.stdout
    assert with_plugin.stdout != plain
    assert torchx("--help", env=env).stdout == with_plugin.stdout
    # nothing stored while a plugin exists: the stale (poisoned) entry was not rewritten
    (entry,) = _entries()
    assert _help_texts(entry) == [POISON]


def test_broken_plugin_error_is_not_hidden_by_the_cache(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    stamp = time.time() - 60
    os.utime(site, (stamp, stamp))
    env = {"PYTHONPATH": str(site)}
    assert torchx("--help", env=env).returncode == 0
    assert len(_entries()) == 1
    write_dist(site, "broken_plugin", {"torchx.cli.cmds": {"bad": "no_such_module:Cmd"}})
    proc = torchx("--help", env=env)
    assert proc.returncode == 1
    assert "torchx: error: cannot load the `bad` command" in proc.stderr


def test_unreadable_or_foreign_entry_is_a_miss() -> None:
    first = torchx("--help").stdout
    (entry,) = _entries()
    entry.write_text("something else\n")
    assert torchx("--help").stdout == first
    entry.write_bytes(b"\xff\xfe garbage")
    assert torchx("--help").stdout == first
