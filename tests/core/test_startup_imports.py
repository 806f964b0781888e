"""Fast paths: what the CLI does not import or compute, and that shortcuts match the slow paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from torchx.schedulers._local._wire import parse_supervisor_args
from torchx.specs.api import Workspace
from torchx.specs.finder import get_component, get_components
from torchx.util.entrypoints import group_may_have_entry_points

PROBE = """\
import contextlib, io, json, runpy, sys
sys.argv = ["torchx", *json.loads(sys.argv[1])]
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        runpy.run_module("torchx.cli.main", run_name="__main__")
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after(*argv: str, cwd: Path | None = None) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(argv))],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TORCHXCONFIG": ""},
        cwd=cwd,
    )
    return set(json.loads(out.stdout))


@pytest.mark.parametrize("argv", [["builtins"], ["runopts", "local_cwd"]])
def test_listing_commands_skip_heavy_modules(argv: list[str]) -> None:
    modules = _modules_after(*argv)
    assert {"asyncio", "docstring_parser", "unittest", "yaml"} & modules == set()
    if not group_may_have_entry_points("torchx.components"):
        assert "importlib.metadata" not in modules
    if argv[0] == "runopts":
        assert "torchx.runner.api" not in modules  # run options need no Runner
        # nor the scheduler itself, nor the app types (local_cwd's Opts need only runopts)
        assert {"torchx.schedulers.local_scheduler", "torchx.specs.api"} & modules == set()
        assert "logging" not in modules  # configured only once imported (cli._logging)
        if not group_may_have_entry_points("torchx.schedulers"):
            assert "torchx.plugins._registry" not in modules  # no plugin can exist


def test_scheduler_plugins_are_looked_for_where_they_can_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib.machinery import PathFinder

    from torchx.schedulers import _may_have_plugin_schedulers

    # other tests may have installed a custom distribution finder (importlib_metadata does),
    # which makes any entry-point answer "maybe": this test wants the plain path finder only
    plain = [f for f in sys.meta_path if not hasattr(f, "find_distributions")]
    monkeypatch.setattr(sys, "meta_path", [*plain, PathFinder])
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(tmp_path)])
    monkeypatch.delitem(sys.modules, "torchx.plugins._registry", raising=False)
    monkeypatch.delitem(sys.modules, "torchx_plugins", raising=False)
    assert not _may_have_plugin_schedulers()
    (tmp_path / "torchx_plugins" / "schedulers").mkdir(parents=True)
    assert _may_have_plugin_schedulers()  # a namespace package directory
    monkeypatch.setattr(sys, "path", [str(tmp_path / "plugins.zip")])
    assert not _may_have_plugin_schedulers()
    (tmp_path / "plugins.zip").write_bytes(b"PK")
    assert _may_have_plugin_schedulers()  # only the registry can look inside a zip
    dist = tmp_path / "site" / "acme-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "entry_points.txt").write_text("[torchx.schedulers]\nacme = acme:create\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site")])
    assert _may_have_plugin_schedulers()  # declared entry points


def test_repeated_builtins_import_no_component_nor_specs(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"  # `python -c` puts the cwd on sys.path: not racy (RACY_SECONDS)
    cwd.mkdir()
    os.utime(cwd, (time.time() - 60, time.time() - 60))
    first = _modules_after("builtins", cwd=cwd)
    assert "torchx.components.utils" in first  # discovered, and the index stored
    again = _modules_after("builtins", cwd=cwd)
    assert {m for m in again if m.startswith(("torchx.components", "torchx.specs"))} == set()
    assert {"docstring_parser", "ast", "inspect", "dataclasses", "logging"} & again == set()


def test_run_parses_component_docstrings_only_for_help(tmp_path: Path) -> None:
    argv = ["run", "--dryrun", "-s", "local_cwd", "utils.echo", "--msg", "hi"]
    assert "docstring_parser" not in _modules_after(*argv)
    assert "docstring_parser" in _modules_after("run", "-s", "local_cwd", "utils.echo", "--help")


def test_local_run_skips_the_stdlib_modules_it_does_not_need(tmp_path: Path) -> None:
    # pathlib (urllib.parse, ipaddress), shutil (bz2, lzma), datetime, pprint and socket (its
    # enums) cost ~8 ms of a ~80 ms `torchx run`: paths are strings there, the launcher uses
    # _socket, the rest is imported on use
    modules = _modules_after("run", "-s", "local_cwd", "utils.sh", "echo", "hi", cwd=tmp_path)
    assert "torchx.schedulers.local_scheduler" in modules  # it did run the app
    assert {"pathlib", "shutil", "datetime", "pprint", "ipaddress", "socket"} & modules == set()


def test_component_help_comes_from_the_docstring() -> None:
    from torchx.components.utils import echo
    from torchx.specs.builders import _create_args_parser

    text = _create_args_parser(echo).format_help()
    assert "Echos a message to stdout" in text
    assert "message to echo (default: hello world)" in text


@pytest.mark.parametrize(
    "text",
    ["/a/b", "rel/dir", ".", "~", "123", "true", "null", "a b", "/p/x.y-z_1", "C:/x", "/a: /b"],
)
def test_workspace_shortcut_matches_yaml(text: str) -> None:
    parsed = yaml.safe_load(text)
    if isinstance(parsed, dict):
        expected = {str(k): "" if v is None else str(v) for k, v in parsed.items()}
    else:
        expected = {parsed if isinstance(parsed, str) else text: ""}
    assert Workspace.from_str(text).projects == expected


def test_component_descriptions_are_parsed_on_first_read() -> None:
    components = get_components()
    echo = components["utils.echo"]
    assert "_description" in echo.__dict__
    assert echo.description.startswith("Echos a message")
    assert echo == get_component("utils.echo")
    assert "description='Echos a message" in repr(echo)


def test_supervisor_arguments(tmp_path: Path) -> None:
    args = [str(tmp_path), "--control-fd", "3", "--launcher-fd", "4"]
    assert parse_supervisor_args(args) == (str(tmp_path), 3, 4)
    assert parse_supervisor_args([str(tmp_path), "--control-fd", "5"]) == (str(tmp_path), 5, None)
    for bad in ([str(tmp_path)], ["--control-fd", "x", str(tmp_path)], ["a", "b"]):
        with pytest.raises(SystemExit, match="usage: torchx-local-supervisor"):
            parse_supervisor_args(bad)


def test_events_nobody_listens_to_are_not_serialized(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from torchx.runner.events import record
    from torchx.runner.events.api import TorchxEvent

    record(TorchxEvent("s", "k", "status"), "null")  # creates the logger with its NullHandler
    listener = logging.getLogger("torchx-events-null")
    saved = listener.handlers[:]
    listener.handlers[:] = [logging.NullHandler()]  # other tests may have left listeners
    try:
        unserializable = TorchxEvent("s", "k", "run", app_metadata={"bad": object()})
        record(unserializable, "null")  # only NullHandlers: skipped, no serialization error
    finally:
        listener.handlers[:] = saved
    assert "failed to serialize" not in caplog.text
    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, r: logging.LogRecord) -> None:
            seen.append(r.getMessage())

    handler = Collect()
    listener.addHandler(handler)
    try:
        record(TorchxEvent("s", "k", "status"), "null")
    finally:
        listener.removeHandler(handler)
    assert len(seen) == 1 and '"api": "status"' in seen[0]
