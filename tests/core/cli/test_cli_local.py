"""End to end on local_cwd through the real `torchx` command: run, then status/log/describe/list/cancel
from second invocations, and signal handling."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _support import TORCHX
from _support import run_torchx as torchx


def wait_for_state(handle: str, states: set[str], timeout: float = 60) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while True:
        proc = torchx("status", "--json", handle)
        assert proc.returncode == 0, proc.stderr
        status = json.loads(proc.stdout)
        if status["state"] in states or time.monotonic() > deadline:
            return status
        time.sleep(0.2)


def test_run_local_waits_and_streams_prefixed_logs() -> None:
    proc = torchx("run", "-s", "local_cwd", "utils.echo", "--msg", "hello from echo")
    assert proc.returncode == 0, proc.stderr
    handle = proc.stdout.strip()
    assert handle.startswith("local_cwd://torchx/echo-")
    assert "echo/0 hello from echo" in proc.stderr
    assert "Traceback" not in proc.stderr

    # a second invocation sees the finished app
    status = torchx("status", handle)
    assert status.returncode == 0, status.stderr
    assert "State: SUCCEEDED" in status.stdout
    as_json = json.loads(torchx("status", "--json", handle).stdout)
    assert as_json["state"] == "SUCCEEDED"

    log = torchx("log", handle)
    assert log.returncode == 0, log.stderr
    assert "echo/0 hello from echo" in log.stdout
    log = torchx("log", f"{handle}/echo/0")
    assert log.returncode == 0, log.stderr
    assert "echo/0 hello from echo" in log.stdout

    missing_role = torchx("log", f"{handle}/ecoh")
    assert missing_role.returncode == 1
    assert "no role `ecoh` found for app" in missing_role.stderr
    assert "`echo`" in missing_role.stderr

    describe = torchx("describe", handle)
    assert describe.returncode == 0, describe.stderr
    assert "'name': 'echo'" in describe.stdout

    listed = torchx("list", "-s", "local_cwd")
    assert listed.returncode == 0, listed.stderr
    assert "APP HANDLE" in listed.stdout and "APP STATUS" in listed.stdout
    assert handle in listed.stdout


def test_run_local_failure_exits_1() -> None:
    proc = torchx("run", "-s", "local_cwd", "utils.sh", "sh", "-c", "echo failing; exit 3")
    assert proc.returncode == 1, proc.stderr
    assert "sh/0 failing" in proc.stderr
    assert "FAILED" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_failure_output_ends_with_the_tail_of_the_failed_replica() -> None:
    script = "for i in $(seq 1 30); do echo line $i; done; echo broke >&2; exit 3"
    proc = torchx("run", "-s", "local_cwd", "utils.sh", "sh", "-c", script)
    assert proc.returncode == 1, proc.stderr
    handle = proc.stdout.strip()
    assert f"TorchX app {handle} ended FAILED: " in proc.stderr
    lines = proc.stderr.rstrip().splitlines()
    assert lines[-21:] == [
        "last 20 log lines of sh/0:",
        *(f"  line {i}" for i in range(12, 31)),
        "  broke",
    ]


def _spare_supervisors() -> list[str]:
    """Pids of this test's prestarted supervisors still waiting for an app.

    A spare's command line names its entry module; it carries the environment of the ``torchx``
    that started it, so this test's own ``TORCHX_HOME`` (one per test) tells its spares from
    those of tests running beside it (``pytest -n``).
    """
    home = f"TORCHX_HOME={os.environ['TORCHX_HOME']}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and b"_spare_entry" in (entry / "cmdline").read_bytes()
                and home in (entry / "environ").read_bytes().split(b"\0")
            ):
                found.append(entry.name)
        except OSError:
            continue
    return found


@pytest.mark.parametrize(
    "argv",
    [
        ["utils.ehco"],  # no such component: fails after the supervisor was prestarted
        ["utils.echo", "--no-such-arg"],
        ["-cfg", "prepend_cwd=maybe", "utils.echo"],
    ],
)
def test_run_local_bad_input_leaves_no_prestarted_supervisor(argv: list[str]) -> None:
    before = _spare_supervisors()
    proc = torchx("run", "-s", "local_cwd", *argv)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert _spare_supervisors() == before  # killed and reaped before the command exited


SPARE_ORDER = """
import sys

def hook(event, args):
    if event == "subprocess.Popen" and any("_spare_entry" in str(a) for a in args[1]):
        loaded = "torchx.schedulers.local_scheduler" in sys.modules
        print(f"spare started, local_scheduler loaded: {loaded}", file=sys.stderr, flush=True)

sys.addaudithook(hook)
from torchx.cli.main import main
main()
"""


def test_run_local_starts_the_supervisor_before_the_scheduler_imports() -> None:
    """The spare supervisor is spawned before the local_cwd scheduler module is imported, so
    its interpreter start overlaps those imports (``torchx.schedulers.local_prestart``)."""
    argv = [sys.executable, "-c", SPARE_ORDER, "run", "-s", "local_cwd", "utils.sh", "echo", "hi"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "sh/0 hi" in proc.stderr
    assert proc.stderr.count("spare started, local_scheduler loaded: False") == 1, proc.stderr
    assert "loaded: True" not in proc.stderr


def test_run_detached_then_cancel_from_another_invocation() -> None:
    proc = torchx("run", "-s", "local_cwd", "-cfg", "detach=True", "utils.sh", "sleep", "60")
    assert proc.returncode == 0, proc.stderr
    handle = proc.stdout.strip()
    try:
        status = wait_for_state(handle, {"RUNNING"})
        assert status["state"] == "RUNNING"
        cancel = torchx("cancel", handle)
        assert cancel.returncode == 0, cancel.stderr
        status = wait_for_state(handle, {"CANCELLED", "FAILED", "SUCCEEDED"})
        assert status["state"] == "CANCELLED"
    finally:
        torchx("cancel", handle)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_cancels_the_app_and_exits_without_traceback(sig: signal.Signals) -> None:
    run = subprocess.Popen(
        [TORCHX, "run", "-s", "local_cwd", "utils.sh", "sh", "-c", "echo started; sleep 60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert run.stdout is not None
        handle = run.stdout.readline().strip()
        assert handle.startswith("local_cwd://"), run.stderr.read() if run.stderr else ""
        assert wait_for_state(handle, {"RUNNING"})["state"] == "RUNNING"
        run.send_signal(sig)
        _, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 128 + sig, err
    assert "Traceback" not in err
    status = wait_for_state(handle, {"CANCELLED", "FAILED", "SUCCEEDED"})
    assert status["state"] == "CANCELLED"


def test_log_filters_streams_and_tails_a_running_app() -> None:
    script = "echo out-1; echo err-1 >&2; sleep 1; echo out-2"
    proc = torchx("run", "-s", "local_cwd", "-cfg", "detach=True", "utils.sh", "sh", "-c", script)
    assert proc.returncode == 0, proc.stderr
    handle = proc.stdout.strip()
    try:
        tail = torchx("log", "-t", handle)  # waits for the start, follows until the end
        assert tail.returncode == 0, tail.stderr
        assert "sh/0 out-1" in tail.stdout and "sh/0 out-2" in tail.stdout

        regex = torchx("log", "--regex", "out-2", handle)
        assert regex.returncode == 0, regex.stderr
        assert regex.stdout.strip() == "sh/0 out-2"

        err = torchx("log", "--streams", "stderr", f"{handle}/sh/0")
        assert err.returncode == 0, err.stderr
        assert err.stdout.strip() == "sh/0 err-1"

        roles = torchx("status", "--roles", "sh", handle)
        assert roles.returncode == 0, roles.stderr
        assert "sh[0]" in roles.stdout
        no_roles = torchx("status", "--roles", "other", handle)
        assert no_roles.returncode == 0, no_roles.stderr
        assert "sh[0]" not in no_roles.stdout
    finally:
        torchx("cancel", handle)
