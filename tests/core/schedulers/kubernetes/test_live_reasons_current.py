"""Why a replica waits or failed, live on the current cluster (1.35), in plain and JobSet modes.

The 1.20 tier (test_live_waiting.py) and the Kueue module cover image pulls and admission; this
module covers the scheduler's own message for a pod no node can take (``Insufficient cpu``), a
container killed for its memory limit (``OOMKilled``) and one the kubelet cannot configure
(``CreateContainerConfigError``), each read back through ``describe`` in both modes, as
``torchx status`` prints it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _k8s_live import leftovers, namespace, wait_until

from torchx.specs.api import AppDef, AppState, Resource, Role

pytestmark = [pytest.mark.k8s, pytest.mark.slow]

IMAGE = "torchx-flow/python:3.11"  # python3 only; loaded into the cluster's containerd by k8s-current.sh
MODES = ["plain", "jobset"]


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    from _k8s_current import module_client

    yield from module_client()


@pytest.fixture(scope="module")
def ns(client: Any) -> Iterator[str]:
    with namespace(client, "tx-reasons") as name:
        yield name


@pytest.fixture
def sched(client: Any) -> Any:
    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    return create_scheduler("test", client=client)


def cfg(ns: str, mode: str) -> dict[str, Any]:
    return {
        "mode": mode,
        "namespace": ns,
        "image_pull_policy": "IfNotPresent",
        "reserved_millicpu": 0,
        "reserved_memmb": 0,
    }


def app(name: str, code: str, resource: Resource) -> AppDef:
    role = Role("worker", image=IMAGE, entrypoint="python3", args=["-c", code], resource=resource)
    return AppDef(name, roles=[role])


def describe_until(sched: Any, app_id: str, what: str, check: Any) -> Any:
    def found() -> Any:
        desc = sched.describe(app_id)
        return desc if desc is not None and check(desc) else None

    return wait_until(f"{app_id}: {what}", found, 180)


def cleaned(sched: Any, client: Any, ns: str, app_id: str) -> None:
    sched.delete(app_id)
    name = app_id.rsplit(":", 1)[1]
    wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))


@pytest.mark.parametrize("mode", MODES)
def test_a_pod_no_node_can_take_says_insufficient_cpu(
    sched: Any, client: Any, ns: str, mode: str
) -> None:
    big = Resource(cpu=64, gpu=0, memMB=64)  # the one node has far fewer CPUs
    app_id = sched.submit(app("huge", "pass", big), cfg(ns, mode))
    try:
        desc = describe_until(
            sched, app_id, "the scheduler's reason", lambda d: "Insufficient cpu" in d.msg
        )
        assert desc.state == AppState.PENDING, desc
        assert "worker[0]" in desc.msg and "0/1 nodes are available" in desc.msg, desc.msg
        sched.cancel(app_id)
        describe_until(sched, app_id, "CANCELLED", lambda d: d.state == AppState.CANCELLED)
    finally:
        cleaned(sched, client, ns, app_id)


@pytest.mark.parametrize("mode", MODES)
def test_a_container_over_its_memory_limit_reads_oomkilled(
    sched: Any, client: Any, ns: str, mode: str
) -> None:
    small = Resource(cpu=0.25, gpu=0, memMB=64)
    code = "b = bytearray(400 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096])"
    app_id = sched.submit(app("oom", code, small), cfg(ns, mode))
    try:
        desc = describe_until(sched, app_id, "FAILED", lambda d: d.state == AppState.FAILED)
        assert "OOMKilled" in desc.msg and "worker[0]" in desc.msg, desc.msg
        assert "137" in desc.msg, desc.msg
    finally:
        cleaned(sched, client, ns, app_id)


@pytest.mark.parametrize("mode", MODES)
def test_a_container_the_kubelet_cannot_configure_says_why(
    sched: Any, client: Any, ns: str, mode: str
) -> None:
    from torchx.specs.overlays import set_overlay

    spec = app("nonroot", "pass", Resource(cpu=0.25, gpu=0, memMB=64))
    # the image runs as root: a pod that must not run as root cannot have its container made
    set_overlay(
        spec.roles[0], "kubernetes", "V1Pod", {"spec": {"securityContext": {"runAsNonRoot": True}}}
    )
    app_id = sched.submit(spec, cfg(ns, mode))
    try:
        desc = describe_until(
            sched, app_id, "the kubelet's reason", lambda d: "CreateContainerConfigError" in d.msg
        )
        assert desc.state == AppState.PENDING and "worker[0]" in desc.msg, desc
        assert "runAsNonRoot" in desc.msg, desc.msg
    finally:
        cleaned(sched, client, ns, app_id)
