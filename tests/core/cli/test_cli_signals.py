"""``torchx run --wait`` stops on SIGTERM and SIGINT on every scheduler: cancel, exit 128+signal.

Real ``torchx`` processes against the real engines (local_cwd is covered in
test_cli_local.py): the Docker engine, the local Kubernetes cluster (an app whose image cannot
be pulled: the CLI waits in the pod watch, which used to swallow the signal) and the local
Slurm. Each test sends the signal while the CLI waits, then checks the exit code, that no
traceback was printed, and that the app was cancelled; it deletes the app afterwards.
"""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _k8s_live import says_pull_error
from _support import TORCHX, run_torchx

SIGNALS = [signal.SIGTERM, signal.SIGINT]
BUSYBOX = "torchx-flow/busybox:latest"  # present in the engine (never pulled by local_docker)


def status_of(handle: str) -> Any:
    from torchx.runner import get_runner

    with get_runner() as runner:
        return runner.status(handle)


def until(what: str, check: Callable[[], Any], timeout: float = 120) -> Any:
    """Polls ``check`` until truthy (the bound only ends a hung test)."""
    end = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)


def interrupt_wait(
    argv: list[str], sig: signal.Signals, ready: Callable[[str], bool], cwd: Path
) -> str:
    """Runs ``torchx run ... --wait``, sends ``sig`` once ``ready(handle)``; returns the handle."""
    run = subprocess.Popen(
        [TORCHX, "run", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=cwd,
    )
    handle = ""
    try:
        assert run.stdout is not None
        handle = run.stdout.readline().strip()
        assert "://" in handle, run.stderr.read() if run.stderr else ""
        until(f"{handle} to be waited for", lambda: ready(handle))
        assert run.poll() is None  # still waiting
        run.send_signal(sig)
        _, err = run.communicate(timeout=90)
    except BaseException:
        if run.poll() is None:
            run.kill()
            run.communicate()
        if handle:
            run_torchx("delete", handle)
        raise
    assert run.returncode == 128 + sig, err
    assert "Traceback" not in err, err
    assert f"cancelling {handle}" in err, err
    return handle


def cancelled(handle: str) -> bool:
    status = status_of(handle)
    return status is None or status.state.name == "CANCELLED"


def running(handle: str) -> bool:
    status = status_of(handle)
    return status is not None and status.state.name == "RUNNING"


@pytest.mark.docker
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_local_docker_wait_stops_on_a_signal(sig: signal.Signals, tmp_path: Path) -> None:
    argv = ["-s", "local_docker", "--wait", "utils.sh", "--image", BUSYBOX, "sleep", "120"]
    handle = interrupt_wait(argv, sig, running, tmp_path)
    try:
        until(f"{handle} to be CANCELLED", lambda: cancelled(handle))
        assert status_of(handle).state.name == "CANCELLED"
    finally:
        assert run_torchx("delete", handle).returncode == 0


@pytest.fixture(scope="module")
def k8s_ns() -> Iterator[tuple[Any, str]]:
    from _k8s_current import module_client
    from _k8s_live import namespace

    for client in module_client():
        with namespace(client, prefix="tx-sig") as name:
            yield client, name


def pull_error(handle: str) -> bool:
    status = status_of(handle)
    return status is not None and says_pull_error(status.msg)


@pytest.mark.k8s
@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_kubernetes_wait_stops_on_a_signal(
    sig: signal.Signals, k8s_ns: tuple[Any, str], tmp_path: Path
) -> None:
    from _k8s_live import leftovers, wait_until

    client, ns = k8s_ns
    argv = [
        "-s", "kubernetes", "--workspace", "", "--wait",
        "-cfg", f"mode=plain,namespace={ns},rank0_address=pod_ip",
        "utils.sh", "--image", BUSYBOX, "sleep", "120",
    ]  # fmt: skip
    # tag latest: the kubelet tries to pull it and cannot; the CLI waits in the pod watch
    handle = interrupt_wait(argv, sig, pull_error, tmp_path)
    try:
        until(f"{handle} to be CANCELLED", lambda: cancelled(handle))
    finally:
        assert run_torchx("delete", handle).returncode == 0
    name = handle.rsplit(":", 1)[1]
    wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))


@pytest.mark.slurm
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_slurm_wait_stops_on_a_signal(sig: signal.Signals, tmp_path: Path) -> None:
    marker = f"tx-sig-{uuid.uuid4().hex[:8]}"
    argv = [
        "-s", "slurm", "--wait", "--workspace", "", "-cfg", f"job_dir={tmp_path / 'job'}",
        "utils.sh", "--cpu", "1", "--memMB", "128", "sh", "-c", f"echo {marker}; sleep 120",
    ]  # fmt: skip
    handle = interrupt_wait(argv, sig, running, tmp_path)
    try:
        until(f"{handle} to be CANCELLED", lambda: cancelled(handle))
        assert status_of(handle).state.name == "CANCELLED"
    finally:
        run_torchx("delete", handle)
