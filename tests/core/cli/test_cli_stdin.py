"""`torchx run --stdin`: the run arguments as one JSON object (TorchX §13), run for real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _support import run_torchx

BASE: dict[str, Any] = {
    "component_name": "utils.echo",
    "scheduler": "local_cwd",
    "scheduler_args": {},
}


def test_stdin_runs_the_component_and_waits(tmp_path: Path) -> None:
    data = {
        **BASE,
        "scheduler_args": {"log_dir": str(tmp_path / "logs")},
        "component_args": {"msg": "hello-from-stdin"},
    }
    proc = run_torchx("run", "--stdin", stdin=json.dumps(data), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    handle = proc.stdout.strip()
    assert handle.startswith("local_cwd://torchx/echo-")
    assert "echo/0 hello-from-stdin" in proc.stderr  # local schedulers stream the logs
    app_id = handle.rsplit("/", 1)[1]
    combined = tmp_path / "logs" / "torchx" / app_id / "echo" / "0" / "combined.log"
    assert combined.read_text() == "hello-from-stdin\n"  # scheduler_args reached the scheduler


def test_stdin_scheduler_cfg_wins_over_scheduler_args(tmp_path: Path) -> None:
    data = {
        **BASE,
        "scheduler_args": {"log_dir": str(tmp_path / "ignored")},
        "scheduler_cfg": {"log_dir": str(tmp_path / "used")},
        "dryrun": True,
    }
    proc = run_torchx("run", "--stdin", stdin=json.dumps(data), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert str(tmp_path / "used") in proc.stdout and str(tmp_path / "ignored") not in proc.stdout


def test_stdin_failing_app_exits_1(tmp_path: Path) -> None:
    data = {**BASE, "component_name": "utils.sh", "component_args_str": ["exit", "3"]}
    proc = run_torchx("run", "--stdin", stdin=json.dumps(data), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "exited with code 3" in proc.stderr and "Traceback" not in proc.stderr


def test_stdin_only_dryrun_may_be_combined(tmp_path: Path) -> None:
    proc = run_torchx("run", "--stdin", "--dryrun", stdin=json.dumps(BASE), cwd=tmp_path)
    assert proc.returncode == 0 and "=== SCHEDULER REQUEST ===" in proc.stdout, proc.stderr
    for extra in (
        ["--wait"],
        ["--log"],
        ["--workspace", str(tmp_path / "elsewhere")],
        ["utils.echo"],
    ):
        proc = run_torchx("run", "--stdin", *extra, stdin=json.dumps(BASE), cwd=tmp_path)
        assert proc.returncode == 2, (extra, proc.stderr)
        (line,) = [x for x in proc.stderr.splitlines() if "error:" in x]
        assert line.endswith(
            "when using --stdin. All configuration should be provided in JSON input."
        ), line
        assert "Traceback" not in proc.stderr


def test_stdin_bad_run_option_names_the_option(tmp_path: Path) -> None:
    data = {**BASE, "scheduler_args": {"detach": "x"}}
    proc = run_torchx("run", "--stdin", stdin=json.dumps(data), cwd=tmp_path)
    assert proc.returncode == 1
    assert "Invalid scheduler configuration: Run option: detach" in proc.stderr
