"""Bad input on the `torchx` command line: one clear line, exit 1, no traceback, nothing left."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _badinput import BadInput

MISSING_APP = "local_cwd://torchx/nosuchapp-b1234567"
_STDIN_BASE = {"component_name": "utils.echo", "scheduler": "local_cwd", "scheduler_args": {}}


def test_workspace_that_does_not_exist(bad: BadInput) -> None:
    line = bad.run("run", "--workspace", "/no/such/dir", "-s", "local_cwd", "utils.echo")
    assert "workspace `/no/such/dir` does not exist" in line
    assert bad.apps() == []  # nothing launched


def test_workspace_typo_suggests_the_sibling(bad: BadInput) -> None:
    (bad.cwd / "project").mkdir()
    line = bad.run("run", "--workspace", str(bad.cwd / "projct"), "-s", "local_cwd", "utils.echo")
    assert f"Did you mean `{bad.cwd / 'project'}`?" in line
    assert bad.apps() == []


def test_workspace_missing_in_dryrun(bad: BadInput) -> None:
    line = bad.run("run", "--dryrun", "--workspace", "nope", "-s", "local_cwd", "utils.echo")
    assert "workspace `nope` does not exist" in line


def test_unknown_component_suggests(bad: BadInput) -> None:
    line = bad.run("run", "--dryrun", "-s", "local_cwd", "utils.ech")
    assert "`utils.echo`" in line


def test_unknown_named_resource_suggests(bad: BadInput) -> None:
    line = bad.run("run", "--dryrun", "-s", "local_cwd", "utils.sh", "-h", "gpu.smal", "true")
    assert "Did you mean `gpu.small`?" in line


def test_component_argument_of_the_wrong_type(bad: BadInput) -> None:
    line = bad.run("run", "--dryrun", "-s", "local_cwd", "utils.echo", "--num_replicas", "x")
    assert "--num_replicas: invalid int value: 'x'" in line


def test_malformed_cfg(bad: BadInput) -> None:
    assert "nokeyvalue" in bad.run(
        "run", "--dryrun", "-s", "local_cwd", "-cfg", "nokeyvalue", "utils.echo"
    )


def test_cfg_value_of_the_wrong_type(bad: BadInput) -> None:
    line = bad.run("run", "--dryrun", "-s", "local_cwd", "-cfg", "detach=maybe", "utils.echo")
    assert "`maybe` is not a valid bool literal" in line


def test_cfg_given_twice(bad: BadInput) -> None:
    line = bad.run("run", "-s", "local_cwd", "-cfg", "a=b", "-cfg", "c=d", "utils.echo")
    assert "`-cfg` is specified more than once" in line


def test_parent_run_id_given_twice(bad: BadInput) -> None:
    args = ("--parent_run_id", "a", "--parent_run_id", "b")
    line = bad.run("run", "-s", "local_cwd", *args, "utils.echo")
    assert "`--parent_run_id` is specified more than once" in line


def test_stdin_invalid_json(bad: BadInput) -> None:
    assert "Unable to parse JSON input" in bad.run("run", "--stdin", stdin="{not json")


def test_stdin_empty(bad: BadInput) -> None:
    assert "Unable to parse JSON input" in bad.run("run", "--stdin", stdin="")


def test_stdin_not_an_object(bad: BadInput) -> None:
    assert "expected a JSON object" in bad.run("run", "--stdin", stdin="[1, 2]")


def test_stdin_missing_fields(bad: BadInput) -> None:
    line = bad.run("run", "--stdin", stdin='{"component_name": "utils.echo"}')
    assert "The following required fields are missing: scheduler, scheduler_args" in line


def test_stdin_unknown_field(bad: BadInput) -> None:
    line = bad.run("run", "--stdin", stdin=json.dumps({**_STDIN_BASE, "schedular": "x"}))
    assert "The following fields are not part of the run command: schedular." in line


def test_stdin_field_of_the_wrong_type(bad: BadInput) -> None:
    line = bad.run("run", "--stdin", stdin=json.dumps({**_STDIN_BASE, "dryrun": "yes"}))
    assert "field `dryrun` of the run command must be a boolean" in line


def test_stdin_run_option_of_the_wrong_type_points_at_the_json(bad: BadInput) -> None:
    data = {**_STDIN_BASE, "scheduler_args": {"prepend_cwd": "maybe"}}
    line = bad.run("run", "--stdin", stdin=json.dumps(data))
    assert "prepend_cwd, must be of type: bool" in line
    assert '`"scheduler_args": {"key1": value1, ...}` of the JSON input' in line
    assert "-cfg" not in line  # there is no command line to add it to
    assert bad.apps() == []


def test_stdin_workspace_that_does_not_exist(bad: BadInput) -> None:
    data = {**_STDIN_BASE, "workspace": "/no/such/ws"}
    assert "workspace `/no/such/ws` does not exist" in bad.run(
        "run", "--stdin", stdin=json.dumps(data)
    )
    assert bad.apps() == []


@pytest.mark.parametrize("cmd", ["status", "describe", "cancel", "delete"])
def test_malformed_handle(bad: BadInput, cmd: str) -> None:
    assert "not-a-handle is not of the form" in bad.run(cmd, "not-a-handle")


@pytest.mark.parametrize("cmd", ["status", "describe", "cancel", "delete", "log"])
def test_missing_app(bad: BadInput, cmd: str) -> None:
    assert "`nosuchapp-b1234567` does not exist" in bad.run(cmd, MISSING_APP)


def test_handle_with_an_unknown_scheduler(bad: BadInput) -> None:
    assert "local_cwdd" in bad.run("status", "local_cwdd://torchx/app")


def test_malformed_log_identifier(bad: BadInput) -> None:
    assert "is not of the form SCHEDULER://" in bad.run("log", "local_cwd:/x")


def test_builtins_print_unknown(bad: BadInput) -> None:
    assert "`utils.touch`" in bad.run("builtins", "--print", "utils.tuch")


def test_entrypoint_not_found(bad: BadInput) -> None:
    proc_line = bad.run("run", "-s", "local_cwd", "utils.binary", "--entrypoint", "nosuchcmd")
    assert "command not found: nosuchcmd" in proc_line
    (state,) = bad.apps()
    assert state["state"] == "FAILED"
    (replica,) = state["roles"][0]["replicas"]  # type: ignore[index]
    assert replica["reason"].startswith("command not found: nosuchcmd")


def test_shell_command_not_found(bad: BadInput) -> None:
    line = bad.run("run", "-s", "local_cwd", "utils.sh", "nosuchcmd-xyz")
    assert "exited with code 127" in line
    (state,) = bad.apps()
    (replica,) = state["roles"][0]["replicas"]  # type: ignore[index]
    assert "a command was not found" in replica["reason"]


def test_status_of_a_cancelled_app_says_what_happened(bad: BadInput, tmp_path: Path) -> None:
    from _support import run_torchx

    proc = run_torchx("run", "-s", "local_cwd", "-cfg", "detach=True", "utils.sh", "sleep", "60")
    handle = proc.stdout.strip()
    assert proc.returncode == 0 and handle, proc.stderr
    assert run_torchx("cancel", handle).returncode == 0
    status = run_torchx("status", handle)
    assert "CANCELLED (exitcode: -15)" in status.stdout, status.stdout
    assert "stopped by SIGTERM: cancelled by process" in status.stdout
    assert "no reply file" not in status.stdout
    bad.assert_nothing_left()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("run", "-s", "local_cwdd", "utils.echo"), "unknown scheduler `local_cwdd`"),
        (("run", "-s", "local_cwd", "utils.echo", "--msg", "a", "--msg", "b"), "Repeated"),
        (("run", "-s", "local_cwd"), "missing component name"),
        (("run", "--stdin", "--wait"), "Cannot specify --wait when using --stdin"),
    ],
)
def test_usage_errors_exit_2(bad: BadInput, args: tuple[str, ...], fragment: str) -> None:
    from _support import run_torchx

    proc = run_torchx(*args, stdin="{}", cwd=bad.cwd)
    assert fragment in bad.check(proc, code=2)


def test_unreachable_kubernetes_api_server_is_one_line(bad: BadInput) -> None:
    """urllib3's retry warnings stay out of the way of the one error line."""
    import socket

    from _support import run_torchx

    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = bad.cwd / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}'}}}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
    )
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    proc = run_torchx("status", "kubernetes://torchx/default:nosuch-abc", env=env, cwd=bad.cwd)
    line = bad.check(proc)
    assert f"cannot reach the Kubernetes API server at https://127.0.0.1:{port}" in line
    assert proc.stderr.strip().splitlines() == [line]
