"""local_docker on the real engine: resources, env, mounts, rank-0 name, logs, cancel, CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _support import run_torchx

from torchx.schedulers.api import Stream
from torchx.specs.api import AppDef, AppState, BindMount, Resource, Role, is_terminal

BUSYBOX = "torchx-flow/busybox:latest"
SESSION = "dockertest"


@pytest.fixture
def sched() -> Iterator[Any]:
    from torchx.schedulers.docker_scheduler import create_scheduler

    s = create_scheduler(SESSION, grace_period=1)
    submitted: list[str] = []
    s.test_submitted = submitted
    yield s
    for app_id in submitted:
        s.delete(app_id)


def _run(sched: Any, app: AppDef, cfg: dict[str, Any] | None = None) -> str:
    app_id = sched.submit(app, cfg or {})
    sched.test_submitted.append(app_id)
    return app_id


def _wait(sched: Any, app_id: str, done: Any = is_terminal, limit: float = 60) -> Any:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        desc = sched.describe(app_id)
        if desc is not None and done(desc.state):
            return desc
        sched.wait_for_change(app_id, 1)
    raise AssertionError(f"{app_id} did not reach the state in {limit}s")


def _sh(name: str, script: str, **kw: Any) -> Role:
    kw.setdefault("resource", Resource(cpu=1, gpu=0, memMB=64))
    return Role(name, BUSYBOX, entrypoint="sh", args=["-c", script], **kw)


@pytest.mark.docker
def test_resources_env_mounts_and_rank0_by_name(sched: Any, tmp_path: Path) -> None:
    import docker

    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)
    script = (
        'if [ "$RANK" = 0 ]; then sleep 5; else ping -c1 -W2 "$TORCHX_RANK0_HOST" >/dev/null'
        ' && echo "reached $TORCHX_RANK0_HOST" > /out/r1.txt; fi; echo "FOO=$FOO BAR=$BAR"'
    )
    role = _sh(
        "w",
        script,
        num_replicas=2,
        env={"RANK": "${replica_id}", "FOO": "role"},
        mounts=[BindMount(str(out), "/out")],
        resource=Resource(cpu=1, gpu=0, memMB=96),
    )
    app_id = _run(sched, AppDef("res", roles=[role]), {"env": {"BAR": "cfg", "FOO": "cfg"}})
    client = docker.from_env()
    try:
        c = client.containers.get(f"{app_id}-w-1")
        host = c.attrs["HostConfig"]
        assert host["NanoCpus"] == 1_000_000_000
        assert host["Memory"] == host["ShmSize"] == 96 * 1024 * 1024
        assert c.attrs["Config"]["Hostname"] == c.name
    finally:
        client.close()
    desc = _wait(sched, app_id)
    assert desc.state == AppState.SUCCEEDED, desc.msg
    assert (out / "r1.txt").read_text().strip() == f"reached {app_id}-w-0"
    assert list(sched.log_iter(app_id, "w", 1)) == ["FOO=role BAR=cfg\n"]


@pytest.mark.docker
def test_log_iter_since_until_and_streams(sched: Any) -> None:
    import docker

    role = _sh("l", "echo early; echo err >&2; sleep 3; echo late")
    app_id = _run(sched, AppDef("logs", roles=[role]))
    _wait(sched, app_id)
    client = docker.from_env()
    try:
        started = client.api.inspect_container(f"{app_id}-l-0")["State"]["StartedAt"]
    finally:
        client.close()
    start = datetime.fromisoformat(started[:26].rstrip("Z") + "+00:00")
    middle = start + timedelta(seconds=2)
    assert list(sched.log_iter(app_id, "l", since=middle)) == ["late\n"]
    assert "late\n" not in list(sched.log_iter(app_id, "l", until=middle))
    assert list(sched.log_iter(app_id, "l", streams=Stream.STDERR)) == ["err\n"]
    assert list(sched.log_iter(app_id, "l", streams=Stream.STDOUT)) == ["early\n", "late\n"]
    with pytest.raises(ValueError, match="no replica 3 of role `l`"):
        list(sched.log_iter(app_id, "l", 3))


@pytest.mark.docker
def test_cancel_kills_a_replica_that_ignores_sigterm(sched: Any) -> None:
    role = _sh("t", "trap 'echo term' TERM; while true; do sleep 0.2; done")
    app_id = _run(sched, AppDef("stubborn", roles=[role]))
    _wait(sched, app_id, lambda s: s == AppState.RUNNING)
    sched.cancel(app_id)  # how long it takes: bench/bench_docker.py
    desc = sched.describe(app_id)
    assert desc.state == AppState.CANCELLED
    assert all(is_terminal(r.state) for r in desc.roles_statuses[0].replicas)
    listed = {a.app_id: a.state for a in sched.list()}
    assert listed[app_id] == AppState.CANCELLED


@pytest.mark.docker
def test_delete_leaves_no_container_network_or_marker(sched: Any) -> None:
    import docker

    app_id = _run(sched, AppDef("gone", roles=[_sh("d", "sleep 300", num_replicas=2)]))
    _wait(sched, app_id, lambda s: s == AppState.RUNNING)
    sched.cancel(app_id)
    sched.delete(app_id)
    label = f"torchx.pytorch.org/app-id={app_id}"
    client = docker.from_env()
    try:
        assert client.containers.list(all=True, filters={"label": label}) == []
        assert client.networks.list(filters={"label": label}) == []
        assert client.volumes.list(filters={"label": label}) == []
    finally:
        client.close()
    assert sched.describe(app_id) is None


@pytest.mark.docker
def test_missing_image_fails_submit_and_leaves_nothing(sched: Any) -> None:
    role = Role("x", "torchx-flow/no-such-image:0", entrypoint="true")
    with pytest.raises(RuntimeError, match="no-such-image:0` is not on the Docker engine"):
        sched.submit(AppDef("noimg", roles=[role]), {})
    assert [a for a in sched.list() if a.name == "noimg"] == []


@pytest.mark.docker
def test_cli_run_status_log_list_on_local_docker(tmp_path: Path) -> None:
    proc = run_torchx(
        "run", "-s", "local_docker", "--wait", "--log", "utils.echo", "--image", BUSYBOX,
        "--msg", "hello-from-docker", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    handle = proc.stdout.splitlines()[0].strip()
    assert handle.startswith("local_docker://")
    assert "hello-from-docker" in proc.stdout + proc.stderr
    try:
        status = run_torchx("status", handle)
        assert status.returncode == 0 and "SUCCEEDED" in status.stdout, status.stderr
        log = run_torchx("log", handle)
        assert "hello-from-docker" in log.stdout, log.stderr
        listed = run_torchx("list", "-s", "local_docker")
        assert handle.rsplit("/", 1)[1] in listed.stdout, listed.stderr
    finally:
        deleted = run_torchx("delete", handle)
    assert deleted.returncode == 0, deleted.stderr
    assert run_torchx("status", handle).returncode != 0  # gone


def test_unreachable_engine_is_one_line_naming_docker_host(tmp_path: Path) -> None:
    pytest.importorskip("docker")
    proc = run_torchx(
        "run", "-s", "local_docker", "utils.echo", "--image", BUSYBOX,
        env={"DOCKER_HOST": f"unix://{tmp_path}/no.sock"}, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if "torchx: error:" in line]
    assert len(lines) == 1, proc.stderr
    assert f"DOCKER_HOST=unix://{tmp_path}/no.sock" in lines[0]
    assert "-s local_cwd" in lines[0] and "Traceback" not in proc.stderr


def test_without_the_docker_sdk_local_docker_is_listed_but_not_default() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["docker"] = None  # as if the [docker] extra were not installed
        from torchx.schedulers import get_default_scheduler_name, get_scheduler_factories
        factories = get_scheduler_factories()
        print("local_docker" in factories, get_default_scheduler_name())
        try:
            factories["local_docker"]("s")
        except ModuleNotFoundError as e:
            print(e)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "True local_cwd"
    assert "pip install 'torchx-flow[docker]'" in out[1]


def test_with_the_docker_sdk_local_docker_is_the_default() -> None:
    pytest.importorskip("docker")
    from torchx.schedulers import get_default_scheduler_name

    assert get_default_scheduler_name() == "local_docker"


@pytest.mark.docker
def test_volume_and_device_mounts(sched: Any) -> None:
    import uuid

    import docker

    from torchx.specs.api import DeviceMount, VolumeMount

    volume = f"torchx-test-{uuid.uuid4().hex[:10]}"
    script = "echo kept > /vol/f && cat /vol/f && test -c /dev/torchx-null && echo device-ok"
    role = _sh(
        "m",
        script,
        mounts=[VolumeMount(volume, "/vol"), DeviceMount("/dev/null", "/dev/torchx-null", "rw")],
    )
    client = docker.from_env()
    try:
        app_id = _run(sched, AppDef("mounts", roles=[role]))
        desc = _wait(sched, app_id)
        assert desc.state == AppState.SUCCEEDED, list(sched.log_iter(app_id, "m"))
        assert list(sched.log_iter(app_id, "m")) == ["kept\n", "device-ok\n"]
        sched.delete(app_id)
    finally:
        try:
            client.volumes.get(volume).remove(force=True)
        except docker.errors.NotFound:
            pass
        client.close()


@pytest.mark.docker
def test_delete_removes_a_network_left_without_containers(sched: Any) -> None:
    import docker

    from torchx.schedulers.docker_scheduler import LABEL_APP_ID, ensure_network

    app_id = "orphan-" + os.urandom(4).hex()
    client = docker.from_env()
    try:
        client.networks.create(f"torchx-{app_id}", driver="bridge", labels={LABEL_APP_ID: app_id})
        assert sched.describe(app_id) is None
        sched.delete(app_id)
        assert client.networks.list(names=[f"torchx-{app_id}"]) == []
        ensure_network(client, f"torchx-{app_id}")  # TorchX's helper: idempotent create
        ensure_network(client, f"torchx-{app_id}")
        assert len(client.networks.list(names=[f"torchx-{app_id}"])) == 1
    finally:
        for net in client.networks.list(names=[f"torchx-{app_id}"]):
            net.remove()
        client.close()


# a replica that stops promptly on SIGTERM (PID 1 ignores it unless it traps it)
_SLEEPER = "trap 'exit 143' TERM; while true; do sleep 0.2; done"


def _running(app_id: str) -> list[str]:
    import docker

    client = docker.from_env()
    try:
        found = client.containers.list(filters={"label": f"torchx.pytorch.org/app-id={app_id}"})
        return sorted(c.name for c in found)
    finally:
        client.close()


@pytest.mark.docker
def test_describe_is_a_read_and_enforce_fail_fast_stops_the_others(sched: Any) -> None:
    app = AppDef("failfast", roles=[_sh("s", _SLEEPER), _sh("f", "exit 3")])
    app_id = _run(sched, app)
    desc = _wait(sched, app_id)
    assert desc.state == AppState.FAILED
    assert "replica f/0" in desc.msg and "code 3" in desc.msg
    for _ in range(3):  # describing again and again stops nothing
        desc = sched.describe(app_id)
        states = {rs.role: rs.replicas[0].state for rs in desc.roles_statuses}
        assert desc.state == AppState.FAILED
        assert states["f"] == AppState.FAILED
        assert states["s"] == AppState.RUNNING, states
    sched.wait_for_change(app_id, 60)  # the app has ended: returns without an event
    assert _running(app_id) == [f"{app_id}-s-0"]

    sched.enforce_fail_fast(app_id)  # synchronous: nothing runs once it returns
    assert _running(app_id) == []
    desc = sched.describe(app_id)
    assert desc.state == AppState.FAILED
    assert all(is_terminal(r.state) for rs in desc.roles_statuses for r in rs.replicas)
    sched.enforce_fail_fast(app_id)  # idempotent


@pytest.mark.docker
def test_enforce_fail_fast_leaves_an_app_without_failures_alone(sched: Any) -> None:
    app_id = _run(sched, AppDef("healthy", roles=[_sh("s", _SLEEPER, num_replicas=2)]))
    _wait(sched, app_id, lambda s: s == AppState.RUNNING)
    sched.enforce_fail_fast(app_id)
    assert sched.describe(app_id).state == AppState.RUNNING
    assert _running(app_id) == [f"{app_id}-s-0", f"{app_id}-s-1"]


@pytest.mark.docker
def test_runner_wait_returning_failed_leaves_no_replica_running() -> None:
    from torchx.runner import get_runner

    app = AppDef("waitff", roles=[_sh("s", _SLEEPER, num_replicas=2), _sh("f", "sleep 1; exit 3")])
    with get_runner() as runner:
        handle = runner.run(app, "local_docker")
        app_id = handle.rsplit("/", 1)[1]
        try:
            status = runner.wait(handle, wait_interval=5)
            assert status is not None and status.state == AppState.FAILED
            assert _running(app_id) == []
        finally:
            runner.delete(handle)
