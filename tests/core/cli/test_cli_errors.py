"""Every user mistake on the `torchx` command line: one clear line, exit 1 (2 for usage), no traceback."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from _support import run_torchx as torchx

MISSING_APP = "local_cwd://torchx/nosuchapp-b1234567"


def assert_error(proc: subprocess.CompletedProcess[str], code: int, *fragments: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, proc.stderr


def error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("torchx: error:")]


def test_unknown_component_suggests_close_match() -> None:
    proc = torchx("run", "--dryrun", "-s", "local_cwd", "utils.ech")
    assert_error(proc, 1, "Failed to run component `utils.ech`", "`utils.echo`")
    assert len(error_lines(proc)) == 1


def test_unknown_scheduler_is_usage_error_listing_names() -> None:
    proc = torchx("run", "-s", "local_cwdd", "utils.echo")
    assert_error(
        proc, 2, "unknown scheduler `local_cwdd`", "Did you mean `local_cwd`?", "local_cwd"
    )


def test_unknown_named_resource_suggests_close_match() -> None:
    proc = torchx("run", "--dryrun", "-s", "local_cwd", "utils.sh", "-h", "gpu.smal", "echo", "hi")
    assert_error(proc, 1, "No named resource found for `gpu.smal`. Did you mean `gpu.small`?")
    assert "torchx: error: No named resource" in proc.stderr  # KeyError quotes are unwrapped


def test_bad_component_argument_type() -> None:
    proc = torchx("run", "--dryrun", "-s", "local_cwd", "utils.echo", "--num_replicas", "x")
    assert proc.returncode in (1, 2)
    assert "Traceback" not in proc.stderr
    assert "num_replicas" in proc.stderr


def test_malformed_cfg() -> None:
    proc = torchx("run", "--dryrun", "-s", "local_cwd", "-cfg", "nokeyvalue", "utils.echo")
    assert_error(proc, 1, "torchx: error:", "nokeyvalue")


def test_cfg_given_twice() -> None:
    proc = torchx("run", "-s", "local_cwd", "-cfg", "a=b", "-cfg", "c=d", "utils.echo")
    assert_error(proc, 1, "`-cfg` is specified more than once")


def test_torchxconfig_env_pointing_to_missing_file(tmp_path: Path) -> None:
    proc = torchx("run", "--dryrun", "utils.echo", env={"TORCHXCONFIG": str(tmp_path / "nope")})
    assert_error(proc, 1, "does not exist or is not a file")


def test_missing_component_file(tmp_path: Path) -> None:
    proc = torchx("run", "--dryrun", "-s", "local_cwd", "foo.py:bar", cwd=tmp_path)
    assert_error(proc, 1, "torchx: error:", "foo.py")


def test_missing_component_function(tmp_path: Path) -> None:
    (tmp_path / "comp.py").write_text("x = 1\n")
    proc = torchx("run", "--dryrun", "-s", "local_cwd", "comp.py:bar", cwd=tmp_path)
    assert_error(proc, 1, "torchx: error:", "bar")


def test_missing_component_name_is_usage_error() -> None:
    proc = torchx("run", "-s", "local_cwd")
    assert_error(proc, 2, "missing component name")


def test_repeated_component_arguments_is_usage_error() -> None:
    proc = torchx("run", "-s", "local_cwd", "utils.echo", "--msg", "a", "--msg", "b")
    assert_error(proc, 2, "Repeated Command Line Arguments: ['--msg']")


@pytest.mark.parametrize("cmd", ["status", "describe", "cancel", "delete"])
def test_malformed_handle(cmd: str) -> None:
    proc = torchx(cmd, "not-a-handle")
    assert_error(proc, 1, "torchx: error: not-a-handle is not of the form")


@pytest.mark.parametrize("cmd", ["status", "describe", "cancel", "delete", "log"])
def test_missing_app(cmd: str) -> None:
    proc = torchx(cmd, MISSING_APP)
    assert_error(
        proc, 1, "AppDef `nosuchapp-b1234567` does not exist or has been removed from `local_cwd`"
    )


def test_handle_with_unknown_scheduler() -> None:
    proc = torchx("status", "local_cwdd://torchx/app")
    assert_error(proc, 1, "local_cwdd", "local_cwd")


def test_malformed_log_identifier() -> None:
    proc = torchx("log", "local_cwd:/x")
    assert_error(proc, 1, "`local_cwd:/x` is not of the form SCHEDULER://[SESSION_NAME]/APP_ID")


def test_stdin_invalid_json() -> None:
    proc = torchx("run", "--stdin", stdin="{not json")
    assert_error(proc, 1, "Unable to parse JSON input for `torchx run` command")


def test_stdin_not_an_object() -> None:
    proc = torchx("run", "--stdin", stdin="[1, 2]")
    assert_error(proc, 1, "expected a JSON object")


def test_stdin_missing_fields() -> None:
    proc = torchx("run", "--stdin", stdin='{"component_name": "utils.echo"}')
    assert_error(proc, 1, "The following required fields are missing: scheduler, scheduler_args")


def test_stdin_unknown_fields() -> None:
    data = (
        '{"component_name": "utils.echo", "scheduler": "local_cwd", "scheduler_args": {}, "x": 1}'
    )
    proc = torchx("run", "--stdin", stdin=data)
    assert_error(proc, 1, "The following fields are not part of the run command: x.")


def test_stdin_with_other_flags_is_usage_error() -> None:
    proc = torchx("run", "--stdin", "--wait", "-cfg", "a=b", stdin="{}")
    assert_error(
        proc, 2, "Cannot specify --scheduler_args, --wait when using --stdin. All configuration"
    )
