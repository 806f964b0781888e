"""`torchx builtins`, `runopts`, `configure` and `run --dryrun` / `--stdin` through the real command."""

from __future__ import annotations

import json
import os
from pathlib import Path

from _support import run_torchx as torchx


def test_builtins_lists_components() -> None:
    proc = torchx("builtins")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("Found ") and lines[0].endswith(" builtin components:")
    count = int(lines[0].split()[1])
    assert len(lines) == count + 1
    assert "  1. " in lines[1]
    assert any(line.endswith(". utils.echo") for line in lines)


def test_builtins_print_source() -> None:
    proc = torchx("builtins", "--print", "utils.echo")
    assert proc.returncode == 0, proc.stderr
    assert "def echo(" in proc.stdout


def test_runopts_one_scheduler() -> None:
    proc = torchx("runopts", "local_cwd")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("local_cwd:\n")
    assert "log_dir" in proc.stdout


def test_runopts_all_schedulers() -> None:
    proc = torchx("runopts")
    assert proc.returncode == 0, proc.stderr
    assert "local_cwd:\n" in proc.stdout


def test_runopts_unknown_scheduler() -> None:
    proc = torchx("runopts", "local_cw")
    assert proc.returncode == 2
    assert "Did you mean `local_cwd`?" in proc.stderr


def test_configure_print() -> None:
    proc = torchx("configure", "--print", "-a", "-s", "local_cwd")
    assert proc.returncode == 0, proc.stderr
    assert "[local_cwd]" in proc.stdout
    assert "log_dir" in proc.stdout


def test_configure_writes_torchxconfig(tmp_path: Path) -> None:
    proc = torchx("configure", "-a", "-s", "local_cwd", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "[local_cwd]" in (tmp_path / ".torchxconfig").read_text()


def test_configure_unknown_scheduler() -> None:
    proc = torchx("configure", "--print", "-s", "local_cwdd")
    assert proc.returncode == 1
    assert "Did you mean `local_cwd`?" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_dryrun_prints_app_and_request(tmp_path: Path) -> None:
    proc = torchx("run", "--dryrun", "-s", "local_cwd", "utils.echo", "--msg", "hi there")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("\n=== APPLICATION ===\n")
    assert "\n=== SCHEDULER REQUEST ===\n" in out
    assert "hi there" in out
    assert "TORCHX_JOB_ID" in out  # the dry-run copy with injected env
    assert not list(Path(os.environ["TORCHX_HOME"]).rglob("request.json"))  # nothing launched


def test_run_dryrun_with_scheduler_from_torchxconfig(tmp_path: Path) -> None:
    cfg = tmp_path / ".torchxconfig"
    cfg.write_text("[cli:run]\nscheduler = local_cwd\ncomponent = utils.echo\n")
    proc = torchx("run", "--dryrun", "--", "--msg", "from-config", env={"TORCHXCONFIG": str(cfg)})
    assert proc.returncode == 0, proc.stderr
    assert "from-config" in proc.stdout


def test_run_stdin_dryrun() -> None:
    data = {
        "component_name": "utils.echo",
        "scheduler": "local_cwd",
        "scheduler_args": {},
        "component_args": {"msg": "json-args"},
    }
    proc = torchx("run", "--stdin", "--dryrun", stdin=json.dumps(data))
    assert proc.returncode == 0, proc.stderr
    assert "=== SCHEDULER REQUEST ===" in proc.stdout
    assert "json-args" in proc.stdout

    data = {**data, "component_args_str": ["--msg", "str-args"], "dryrun": True}
    proc = torchx("run", "--stdin", stdin=json.dumps(data))
    assert proc.returncode == 0, proc.stderr
    assert "str-args" in proc.stdout and "json-args" not in proc.stdout
