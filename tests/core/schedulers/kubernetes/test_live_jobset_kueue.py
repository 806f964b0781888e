"""Jobset mode, Kueue and startup reasons against the current cluster (1.35, CoreDNS, Kueue, JobSet).

Needs ``scripts/infra/k8s-current.sh start`` (the ``k8s`` marker: skipped without it,
a failure under ``CI=true``). Pods there see only images loaded into the cluster's containerd;
``torchx-flow/busybox:latest`` is loaded at start, and since a ``:latest`` image is pulled by
default (``imagePullPolicy: Always``), the apps here run with ``image_pull_policy=IfNotPresent``.
Each module gets its own namespace; the Kueue objects (ResourceFlavor, ClusterQueue,
WorkloadPriorityClasses) get unique names and are deleted afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from _k8s_live import namespace, wait_until

from torchx.specs.api import NONE, AppDef, AppState, Resource, Role, is_terminal

pytestmark = [pytest.mark.k8s, pytest.mark.slow]

IMAGE = "torchx-flow/busybox:latest"
SMALL = Resource(cpu=0.25, gpu=0, memMB=32)
# a replica that runs until stopped and ends at once on SIGTERM (a bare ``sleep`` as PID 1
# ignores it: an evicted or cancelled pod would wait out its 30 s grace period)
SLEEP = "trap 'exit 143' TERM; sleep 600 & wait"
KUEUE = ("kueue.x-k8s.io", "v1beta2")


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    pytest.importorskip("kubernetes")
    from _infra import k8s_cluster
    from kubernetes import config

    found, why = k8s_cluster()
    if found is None:
        pytest.skip(why)  # conftest turns this into a failure under CI=true
    api = config.new_client_from_config(config_file=found)
    yield api
    api.close()


@pytest.fixture(scope="module")
def ns(client: Any) -> Iterator[str]:
    with namespace(client, "tx-jobset") as name:
        yield name


@pytest.fixture
def sched(client: Any) -> Iterator[Any]:
    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    scheduler = create_scheduler("test", client=client)
    yield scheduler


def cfg(ns: str, **extra: Any) -> dict[str, Any]:
    return {
        "mode": "jobset",
        "namespace": ns,
        "image_pull_policy": "IfNotPresent",
        "reserved_millicpu": 0,
        "reserved_memmb": 0,
        **extra,
    }


def role(name: str, script: str, replicas: int = 1, image: str = IMAGE) -> Role:
    return Role(
        name=name,
        image=image,
        entrypoint="sh",
        args=["-c", script],
        num_replicas=replicas,
        resource=SMALL,
    )


def wait_state(sched: Any, app_id: str, done: Any = is_terminal, timeout: float = 240) -> Any:
    def check() -> Any:
        resp = sched.describe(app_id)
        return resp if resp is not None and done(resp.state) else None

    return wait_until(f"{app_id} to reach the expected state", check, timeout)


# rank 0 listens on port 29500 until every other replica has said hello (a peer whose nc reported
# a failure after its line arrived says it again: duplicates are dropped), prints what it got, and
# keeps accepting for 15 s more so such a late repeat still connects; the others reach it by
# TORCHX_RANK0_HOST (the JobSet's headless Service name, resolved by CoreDNS)
RANK0 = (
    'echo "rank0 $TORCHX_REPLICA_ID"; : > /tmp/got; '
    'until [ "$(sort -u /tmp/got | wc -l)" -ge {peers} ]; do nc -l -p 29500 >> /tmp/got; done; '
    "sort -u /tmp/got; (while :; do nc -l -p 29500 > /dev/null; done) & sleep 15"
)
# A send that nc reports done can still be lost: a connection queued behind another one is reset
# when rank 0's one-shot nc exits, after the peer's nc wrote its line and ended. So each peer says
# hello 4 more times, a second apart, after its first send that succeeded (rank 0 drops repeats).
PEER = (
    'echo "peer {role} $TORCHX_REPLICA_ID"; n=0; '
    'until echo "hello from {role} $TORCHX_REPLICA_ID" | nc -w 2 "$TORCHX_RANK0_HOST" 29500; do '
    'n=$((n+1)); [ $n -gt 120 ] && exit 3; sleep 1; done; echo "reached $TORCHX_RANK0_HOST"; '
    "for i in 1 2 3 4; do sleep 1; "
    'echo "hello from {role} $TORCHX_REPLICA_ID" | nc -w 2 "$TORCHX_RANK0_HOST" 29500; done; true'
)


def test_jobset_2x2_rank0_by_dns_logs_list_cancel_delete(sched: Any, ns: str) -> None:
    trainer_peer = PEER.format(role="trainer")
    script = (
        f'if [ "$TORCHX_REPLICA_ID" = 0 ]; then {RANK0.format(peers=3)}; else {trainer_peer}; fi'
    )
    app = AppDef("ddp", [role("trainer", script, 2), role("worker", PEER.format(role="worker"), 2)])
    app_id = sched.submit(app, cfg(ns))
    name = app_id.split(":", 1)[1]
    desc = wait_state(sched, app_id)
    assert desc.state == AppState.SUCCEEDED, desc
    lines = "".join(sched.log_iter(app_id, "trainer", 0))
    for peer in ("trainer 1", "worker 0", "worker 1"):
        assert f"hello from {peer}" in lines, lines
    worker1 = "".join(sched.log_iter(app_id, "worker", 1))
    assert f"reached {name}-trainer-0-0.{name}" in worker1 and "peer worker 1" in worker1
    assert [r.id for r in desc.roles_statuses[1].replicas] == [0, 1]

    def listed() -> Any:  # list reads the JobSet's own counts, written a moment later
        states = {a.app_id: a.state for a in sched.list({"namespace": ns})}
        return states[app_id] == AppState.SUCCEEDED or None

    wait_until("list to show the app SUCCEEDED", listed, 60)
    # cancel keeps the JobSet (CANCELLED) until deleted
    other = sched.submit(AppDef("sleeper", [role("s", SLEEP)]), cfg(ns))
    wait_state(sched, other, lambda s: s == AppState.RUNNING)
    sched.cancel(other)
    assert wait_state(sched, other).state == AppState.CANCELLED
    sched.delete(other)
    sched.delete(app_id)
    wait_until(
        "both apps gone",
        lambda: sched.describe(app_id) is None and sched.describe(other) is None,
        60,
    )


@pytest.mark.parametrize("mode", ["jobset", "plain"])
def test_unpullable_image_fails_within_startup_timeout(sched: Any, ns: str, mode: str) -> None:
    app = AppDef("nopull", [role("main", "true", image="torchx-flow/not-there:1")])
    app_id = sched.submit(app, cfg(ns, mode=mode, startup_timeout=20.0))

    def pull_reason() -> Any:
        desc = sched.describe(app_id)
        return desc if "ImagePull" in desc.msg or "ErrImage" in desc.msg else None

    seen = wait_until("the pull error in describe", pull_reason, 120)
    assert seen.state in (AppState.PENDING, AppState.FAILED), seen
    desc = wait_state(sched, app_id, lambda s: s == AppState.FAILED, timeout=180)
    assert desc.msg.startswith("not started within startup_timeout=20s: main[0]"), desc.msg
    assert "ErrImagePull" in desc.msg or "ImagePullBackOff" in desc.msg, desc.msg
    sched.enforce_fail_fast(app_id)
    after = sched.describe(app_id)
    assert after.state == AppState.FAILED and "startup_timeout=20s" in after.msg, after
    sched.delete(app_id)


@pytest.fixture(scope="module")
def queue(client: Any, ns: str) -> Iterator[str]:
    """A ClusterQueue with quota for one app (0.25 cpu) and its LocalQueue in ``ns``."""
    from kubernetes import client as k8s

    custom = k8s.CustomObjectsApi(client)
    tag = uuid.uuid4().hex[:6]
    flavor, cq = f"tx-flavor-{tag}", f"tx-cq-{tag}"
    objects: list[tuple[str, dict[str, Any]]] = [
        ("resourceflavors", {"kind": "ResourceFlavor", "metadata": {"name": flavor}}),
        ("workloadpriorityclasses", _priority(f"tx-low-{tag}", 10)),
        ("workloadpriorityclasses", _priority(f"tx-high-{tag}", 1000)),
        ("clusterqueues", _cluster_queue(cq, flavor)),
    ]
    for plural, body in objects:
        body["apiVersion"] = "/".join(KUEUE)
        custom.create_cluster_custom_object(*KUEUE, plural, body)
    local = {
        "apiVersion": "/".join(KUEUE),
        "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": ns},
        "spec": {"clusterQueue": cq},
    }
    custom.create_namespaced_custom_object(*KUEUE, ns, "localqueues", local)
    try:
        yield tag
    finally:
        custom.delete_namespaced_custom_object(*KUEUE, ns, "localqueues", "lq")
        for plural, body in reversed(objects):
            custom.delete_cluster_custom_object(*KUEUE, plural, body["metadata"]["name"])


def _priority(name: str, value: int) -> dict[str, Any]:
    return {"kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}


def _cluster_queue(name: str, flavor: str) -> dict[str, Any]:
    resources = [
        {"name": "cpu", "nominalQuota": "250m"},
        {"name": "memory", "nominalQuota": "64Mi"},
    ]
    return {
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [{"name": flavor, "resources": resources}],
                }
            ],
        },
    }


@pytest.mark.parametrize("mode", ["jobset", "plain"])
def test_kueue_second_app_waits_then_runs(sched: Any, ns: str, queue: str, mode: str) -> None:
    first = sched.submit(
        AppDef("first", [role("main", "sleep 15")]), cfg(ns, mode=mode, queue="lq")
    )
    wait_state(sched, first, lambda s: s == AppState.RUNNING)
    second = sched.submit(AppDef("second", [role("main", "true")]), cfg(ns, mode=mode, queue="lq"))

    def waits_with_reason() -> Any:
        desc = sched.describe(second)
        return desc if desc.state == AppState.PENDING and "insufficient" in desc.msg else None

    desc = wait_until("the second app to wait with Kueue's reason", waits_with_reason, 60)
    assert desc.msg.startswith("waiting for Kueue admission in queue lq:"), desc.msg
    # what a user sees: `torchx status` prints the same reason
    cli = [sys.executable, "-m", "torchx.cli.main", "status", f"kubernetes://test/{second}"]
    out = subprocess.run(cli, capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert "waiting for Kueue admission in queue lq" in out.stdout + out.stderr, out
    assert wait_state(sched, first).state == AppState.SUCCEEDED
    done = wait_state(sched, second)
    assert done.state == AppState.SUCCEEDED and done.msg == NONE, done
    sched.delete(first)
    sched.delete(second)


def test_kueue_preemption_is_shown_and_requeued(sched: Any, ns: str, queue: str) -> None:
    low = sched.submit(
        AppDef("low", [role("main", SLEEP)]),
        cfg(ns, queue="lq", priority_class=f"tx-low-{queue}"),
    )
    wait_state(sched, low, lambda s: s == AppState.RUNNING)
    high = sched.submit(
        AppDef("high", [role("main", "sleep 5")]),
        cfg(ns, queue="lq", priority_class=f"tx-high-{queue}"),
    )

    def preempted() -> Any:
        desc = sched.describe(low)
        return desc if desc.state == AppState.PENDING and "preempted by Kueue" in desc.msg else None

    desc = wait_until("the low-priority app to read its preemption", preempted, 120)
    assert "evicted by Kueue" in desc.msg, desc.msg
    assert wait_state(sched, high).state == AppState.SUCCEEDED
    # requeued: admitted again once the high-priority app has ended
    wait_state(sched, low, lambda s: s == AppState.RUNNING)
    sched.cancel(low)
    assert wait_state(sched, low).state == AppState.CANCELLED
    sched.delete(low)
    sched.delete(high)


@pytest.mark.parametrize("mode", ["jobset", "plain"])
def test_evicted_pod_is_retried_but_an_app_error_fails_fast(
    sched: Any, client: Any, ns: str, mode: str
) -> None:
    """``max_retries=0``: an eviction (``DisruptionTarget``) still retries; exit 3 fails at once."""
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(client)
    script = "trap 'exit 143' TERM; sleep 15 & wait; echo finished"
    app_id = sched.submit(AppDef("evict", [role("main", script)]), cfg(ns, mode=mode))
    name = app_id.split(":", 1)[1]
    wait_state(sched, app_id, lambda s: s == AppState.RUNNING)
    (pod,) = core.list_namespaced_pod(ns, label_selector=f"app.kubernetes.io/instance={name}").items
    eviction = k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name=pod.metadata.name, namespace=ns))
    core.create_namespaced_pod_eviction(pod.metadata.name, ns, eviction)
    desc = wait_state(sched, app_id)
    assert desc.state == AppState.SUCCEEDED, desc
    pods = core.list_namespaced_pod(ns, label_selector=f"app.kubernetes.io/instance={name}").items
    # the eviction deleted the first pod; a new one ran the script to the end
    assert [p.metadata.name for p in pods] != [pod.metadata.name]
    assert [p.status.phase for p in pods] == ["Succeeded"]
    sched.delete(app_id)
    failing = sched.submit(AppDef("apperr", [role("main", "exit 3")]), cfg(ns, mode=mode))
    desc = wait_state(sched, failing)
    assert desc.state == AppState.FAILED and "exited with code 3" in desc.msg, desc
    sched.delete(failing)


def test_run_wait_ends_with_the_pull_reason(client: Any, ns: str) -> None:
    """``torchx run --wait`` with an unpullable image ends within ``startup_timeout``, exit 1."""
    cfg_arg = f"mode=jobset,namespace={ns},startup_timeout=15,image_pull_policy=IfNotPresent"
    cli = [
        *(sys.executable, "-m", "torchx.cli.main", "run", "-s", "kubernetes", "--wait"),
        *("--workspace", "", "-cfg", cfg_arg, "utils.echo", "--image", "torchx-flow/not-there:1"),
    ]
    out = subprocess.run(cli, capture_output=True, text=True, timeout=300, env=os.environ.copy())
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "not started within startup_timeout=15s" in text and "ImagePull" in text, text
