"""Why a replica waits, live on the current cluster (1.35, plain mode): an unschedulable pod and
an image that cannot be pulled say so in ``AppStatus.msg``; ``startup_timeout`` cancels such an
app with that reason and leaves no pod; ``torchx run --startup_timeout`` reports it and exits 1.

``torchx-flow/busybox:latest`` is loaded into the cluster's containerd, but tag ``latest`` means
pull policy Always and nothing can be pulled here: its pod waits in
``ErrImagePull``/``ImagePullBackOff``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _k8s_current import module_client
from _k8s_live import IMAGE, docker_env, leftovers, namespace, says_pull_error, wait_until

from torchx.specs.api import AppDef, AppState, Resource, Role

pytestmark = [pytest.mark.k8s, pytest.mark.slow]

UNPULLABLE = "torchx-flow/busybox:latest"
SCHEDULING = r"worker\[0\] (Unschedulable|FailedScheduling): 0/1 nodes are available: "


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    yield from module_client()


@pytest.fixture(scope="module")
def ns(client: Any) -> Iterator[str]:
    with namespace(client, prefix="tx-wait") as name:
        yield name


@pytest.fixture
def sched(client: Any) -> Any:
    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    return create_scheduler("test", client=client)


def cfg(ns: str) -> dict[str, Any]:
    return {"mode": "plain", "namespace": ns, "rank0_address": "pod_ip"}


def app(name: str, image: str = IMAGE, cpu: float = 0.2) -> AppDef:
    role = Role(
        "worker",
        image=image,
        entrypoint="sh",
        args=["-c", "echo hi"],
        resource=Resource(cpu=cpu, gpu=0, memMB=64),
    )
    return AppDef(name, roles=[role])


def waiting_msg(sched: Any, app_id: str, words: tuple[str, ...]) -> Any:
    def check() -> Any:
        resp = sched.describe(app_id)
        return resp if resp is not None and any(w in resp.msg for w in words) else None

    return wait_until(f"{app_id}'s msg to name one of {words}", check, timeout=120)


def test_an_unschedulable_pod_says_insufficient_cpu(sched: Any, client: Any, ns: str) -> None:
    app_id = sched.submit(app("nocpu", cpu=8), cfg(ns))  # the node has 2 CPUs
    name = app_id.split(":", 1)[1]
    try:
        resp = waiting_msg(sched, app_id, ("Insufficient cpu",))
        assert resp.state == AppState.PENDING
        # the pod's PodScheduled condition (Unschedulable) or, in the moment before the
        # scheduler has written it, the scheduler's FailedScheduling event on the pod
        assert re.match(SCHEDULING, resp.msg), resp.msg
        (replica,) = resp.roles_statuses[0].replicas
        assert replica.state == AppState.PENDING
        assert "Insufficient cpu" in json.loads(replica.structured_error_msg)["message"]
    finally:
        sched.delete(app_id)
    wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))


def test_startup_timeout_cancels_an_app_whose_image_cannot_be_pulled(client: Any, ns: str) -> None:
    from torchx.runner import get_runner
    from torchx.runner.follow import follow

    with get_runner() as runner:
        handle = runner.run(app("nopull", image=UNPULLABLE), "kubernetes", cfg(ns))
        name = handle.rsplit(":", 1)[1]
        try:
            status = runner.status(handle)
            assert status is not None
            result = follow(runner, handle, startup_timeout=20, wait_interval=1)
            assert result.startup_expired and result.cancelled, result
            assert result.state == "CANCELLED"
            assert result.reason.startswith("did not start within 20s (PENDING: worker[0] ")
            assert says_pull_error(result.reason), result.reason
            assert UNPULLABLE in result.reason
            head = result.failure_message().splitlines()[0]
            assert head == f"TorchX app {handle} ended CANCELLED: {result.reason}"
            # cancelled: the Job stops its pod, nothing is left running
            wait_until("the pod to go", lambda: "pods" not in leftovers(client, ns, name))
        finally:
            runner.delete(handle)
    wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))


def test_cli_run_says_why_it_waits_and_gives_up(client: Any, ns: str, tmp_path: Path) -> None:
    from _support import run_torchx

    run = run_torchx(
        "run", "-s", "kubernetes", "--workspace", "", "--startup_timeout", "20",
        "-cfg", f"mode=plain,namespace={ns},rank0_address=pod_ip",
        "utils.echo", "--image", UNPULLABLE,
        env={"DOCKER_HOST": docker_env()["DOCKER_HOST"]}, cwd=tmp_path,
    )  # fmt: skip
    handle = run.stdout.strip().splitlines()[-1]
    try:
        assert run.returncode == 1, run.stderr
        assert "Traceback" not in run.stderr
        assert f"TorchX app {handle} ended CANCELLED: did not start within 20s (PENDING:" in (
            run.stderr
        )
        assert says_pull_error(run.stderr), run.stderr
        # while it waits, it says why (before giving up)
        assert f"INFO     {handle} is PENDING: echo[0] " in run.stderr, run.stderr
        status = run_torchx("status", handle)
        assert "State: CANCELLED" in status.stdout, status.stdout
    finally:
        assert run_torchx("delete", handle).returncode == 0
    name = handle.rsplit(":", 1)[1]
    wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))
