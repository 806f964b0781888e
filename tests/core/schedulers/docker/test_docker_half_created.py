"""A local_docker app whose submitter died between its containers: half-created, not hung.

The submitter is a real child process that submits a two-replica app and is ``kill -9``-ed
part-way (after creating rank 0's container without starting it, or after starting it and
before creating the next); the engine's leftovers must read FAILED with the half-created
message (an Airflow retry replaces such an app), and PENDING "in progress" while the
submitter still lives.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from torchx.schedulers._docker._partial import SUBMIT_MARGIN, Partial, check
from torchx.schedulers._docker._state import ContainerInfo
from torchx.schedulers.submission import half_created, submission_in_progress
from torchx.specs.api import AppState, is_terminal
from torchx.util.host import host_placement, process_gone, process_ident

BUSYBOX = "torchx-flow/busybox:latest"
SESSION = "halfcreated"

# the submitter: submits `w` x 2 (sleep 600) and stops at the second container as told
SUBMITTER = textwrap.dedent(
    """
    import os, signal, sys
    from torchx.schedulers._docker._client import DockerEngine
    from torchx.schedulers.docker_scheduler import create_scheduler
    from torchx.specs.api import AppDef, Resource, Role

    how = sys.argv[1]
    run = DockerEngine.run
    calls = []

    def stop_here():
        if how == "block":
            print("blocked", flush=True)
            sys.stdin.readline()
        os.kill(os.getpid(), signal.SIGKILL)

    def patched(self, container):
        calls.append(container)
        if how == "created" and len(calls) == 1:
            c = self.client.containers.create(
                container.image, container.command, **container.kwargs
            )
            stop_here()
        if len(calls) == 2:
            stop_here()
        return run(self, container)

    DockerEngine.run = patched
    s = create_scheduler(sys.argv[2], grace_period=1)
    role = Role("w", sys.argv[3], entrypoint="sh", args=["-c", "sleep 600"], num_replicas=2,
                resource=Resource(cpu=1, gpu=0, memMB=64))
    info = s.submit_dryrun(AppDef("half", roles=[role]), {})
    print(info.request.app_id, flush=True)
    s.schedule(info)
    """
)


def _info(role: str, k: int, status: str, **kw: Any) -> ContainerInfo:
    return ContainerInfo(f"a-{role}-{k}", status, 0, role, 0, k, **kw)


def test_check_names_the_replicas_missing_or_never_started() -> None:
    stamp = {"role_replicas": "w=3", "submitter": "host:elsewhere/b|1|2", "submitted_at": 100.0}
    infos = [_info("w", 0, "running", **stamp), _info("w", 1, "created", **stamp)]
    early = check(infos, now=100.0 + SUBMIT_MARGIN)
    assert early == Partial(("w[1]", "w[2]"), failed=False)
    assert early.state(AppState.RUNNING) == AppState.PENDING
    late = check(infos, now=100.0 + SUBMIT_MARGIN + 4)
    assert late is not None and late.failed and late.state(AppState.RUNNING) == AppState.FAILED
    assert late.msg().startswith("app half-created: w[1], w[2] were never started")
    assert check([_info("w", 0, "running")], now=1e12) is None  # an older version's app
    done = [_info("w", k, "exited", **stamp) for k in range(3)]
    assert check(done, now=1e12) is None


def test_process_gone_tells_a_live_process_from_an_ended_one() -> None:
    child = subprocess.Popen(["sleep", "60"])
    try:
        ident = process_ident(child.pid)
        assert process_gone(ident) is False
        assert process_gone(process_ident()) is False
    finally:
        child.kill()
        child.wait()
    assert process_gone(ident) is True
    _, pid, start = ident.split("|")
    assert process_gone(f"{host_placement()}|{pid}|{int(start) + 1}") is True  # pid reused
    assert process_gone(f"host:elsewhere/x|{pid}|{start}") is None  # another host: cannot tell
    assert process_gone("garbage") is None


@pytest.fixture
def sched() -> Iterator[Any]:
    from _infra import docker_host, missing

    if docker_host()[0] is None:
        missing("a Docker engine", docker_host()[1])
    from torchx.schedulers.docker_scheduler import create_scheduler

    s = create_scheduler(SESSION, grace_period=1)
    yield s
    for app in s.list():
        s.delete(app.app_id)
    s.close()


def _submitter(how: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SUBMITTER, how, SESSION, BUSYBOX],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    app_id = proc.stdout.readline().strip()
    assert app_id, "the submitter printed no app id"
    return proc, app_id


@pytest.mark.docker
@pytest.mark.parametrize("how", ["created", "started"])
def test_a_submitter_killed_between_containers_leaves_a_half_created_app(
    sched: Any, how: str
) -> None:
    proc, app_id = _submitter(how)
    assert proc.wait(timeout=120) == -signal.SIGKILL
    desc = sched.describe(app_id)
    assert desc is not None and half_created(desc), (desc.state, desc.msg)
    assert "w[1]" in desc.msg and ("w[0]" in desc.msg) == (how == "created")
    sched.enforce_fail_fast(app_id)  # what Runner.wait does on FAILED: nothing keeps running
    after = sched.describe(app_id)
    assert after is not None and after.state == AppState.FAILED
    states = [r.state for rs in after.roles_statuses for r in rs.replicas]
    assert not [s for s in states if s == AppState.RUNNING]


@pytest.mark.docker
def test_in_progress_while_the_submitter_lives_then_half_created(sched: Any) -> None:
    proc, app_id = _submitter("block")
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "blocked"
        desc = sched.describe(app_id)
        assert desc is not None and submission_in_progress(desc), (desc.state, desc.msg)
        assert desc.msg.endswith("w[1] not started yet") and not is_terminal(desc.state)
    finally:
        proc.kill()
        proc.wait(timeout=60)
    desc = sched.describe(app_id)
    assert desc is not None and half_created(desc), (desc.state, desc.msg)


@pytest.mark.docker
def test_a_whole_app_reads_as_before(sched: Any) -> None:
    from torchx.specs.api import AppDef, Resource, Role

    role = Role("w", BUSYBOX, entrypoint="sh", args=["-c", "true"], num_replicas=2)
    role.resource = Resource(cpu=1, gpu=0, memMB=64)
    app_id = sched.submit(AppDef("whole", roles=[role]), {})
    deadline = 60.0
    while deadline > 0:
        desc = sched.describe(app_id)
        if desc is not None and is_terminal(desc.state):
            break
        sched.wait_for_change(app_id, 1)
        deadline -= 1
    assert desc is not None and desc.state == AppState.SUCCEEDED and desc.msg == ""
