"""A half-created plain-mode app on the current local cluster (1.35;
``_kubernetes/plain_partial.py``).

A real submitter (``torchx.runner`` in a subprocess, rank 0 first with ``rank0_address=pod_ip``)
is killed with SIGKILL between its two Job creations: it sleeps before the second one (the
test-only hook ``tests/_hooks/k8s_job_delay``, on its ``PYTHONPATH``) and records a 2 s margin
(``TORCHX_K8S_SUBMIT_MARGIN``). Relies on what ``tests/_k8s_live.py`` states.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from _k8s_current import module_client
from _k8s_job_delay import delay_env
from _k8s_live import IMAGE, leftovers, namespace, wait_until

from torchx.specs.api import AppDef, AppState, Resource, Role

pytestmark = [pytest.mark.k8s, pytest.mark.slow]

# PID 1 ignores SIGTERM unless it traps it (else every stop waits out the 30 s grace period)
SLEEP = "trap 'exit 143' TERM; sleep 600 & wait"

SUBMIT = """
import sys
from torchx.runner import get_runner
from torchx.specs.api import AppDef, Resource, Role

role = Role("main", image=sys.argv[2], entrypoint="sh", args=["-c", sys.argv[3]],
            num_replicas=2, resource=Resource(cpu=0.1, gpu=0, memMB=64))
cfg = {"mode": "plain", "namespace": sys.argv[1], "rank0_address": "pod_ip"}
with get_runner() as runner:
    print(runner.run(AppDef("halfkill", roles=[role]), "kubernetes", cfg), flush=True)
"""


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    yield from module_client()


@pytest.fixture(scope="module")
def ns(client: Any) -> Iterator[str]:
    with namespace(client, prefix="tx-half") as name:
        yield name


@pytest.fixture
def sched(client: Any) -> Any:
    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    return create_scheduler("test", client=client)


def sleeper(name: str) -> AppDef:
    role = Role("main", image=IMAGE, entrypoint="sh", args=["-c", SLEEP], num_replicas=2,
                resource=Resource(cpu=0.1, gpu=0, memMB=64))  # fmt: skip
    return AppDef(name, roles=[role])


def jobs_of(client: Any, ns: str, app_name: str) -> list[Any]:
    from kubernetes import client as k8s

    selector = f"torchx.pytorch.org/app-name={app_name}"
    return list(k8s.BatchV1Api(client).list_namespaced_job(ns, label_selector=selector).items)


def rank0_state(sched: Any, app_id: str) -> AppState:
    resp = sched.describe(app_id)
    return resp.roles_statuses[0].replicas[0].state if resp is not None else AppState.UNKNOWN


def test_a_job_missing_during_submission_is_pending_and_named(
    sched: Any, client: Any, ns: str
) -> None:
    from kubernetes import client as k8s

    app_id = sched.submit(sleeper("halfwait"), {"mode": "plain", "namespace": ns,
                                                "rank0_address": "pod_ip"})  # fmt: skip
    name = app_id.split(":", 1)[1]
    try:
        k8s.BatchV1Api(client).delete_namespaced_job(
            f"{name}-main-1", ns, propagation_policy="Background"
        )
        wait_until("the Job to go", lambda: len(jobs_of(client, ns, "halfwait")) == 1)
        resp = sched.describe(app_id)  # within the default 60 s margin of rank 0's start
        assert resp.state == AppState.PENDING, resp.msg
        assert resp.msg.startswith("submission in progress: main[1] not created yet"), resp.msg
        states = {r.id: r.state for r in resp.roles_statuses[0].replicas}
        assert states[1] == AppState.PENDING and set(states) == {0, 1}
    finally:
        sched.delete(app_id)
    wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))


def test_a_submitter_killed_between_two_jobs_leaves_a_failed_app_that_cancel_stops(
    sched: Any, client: Any, ns: str
) -> None:
    env = {**delay_env(600), "TORCHX_K8S_SUBMIT_MARGIN": "2"}
    proc = subprocess.Popen(
        [sys.executable, "-c", SUBMIT, ns, IMAGE, SLEEP],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # rank 0's pod has its IP (so the submitter is in its delay) once rank 0 runs
        (job,) = wait_until("rank 0's Job", lambda: jobs_of(client, ns, "halfkill"))
        name = job.metadata.labels["app.kubernetes.io/instance"]
        app_id = f"{ns}:{name}"
        wait_until("rank 0 to run", lambda: rank0_state(sched, app_id) == AppState.RUNNING)
    finally:
        proc.send_signal(signal.SIGKILL)
        output = proc.communicate()[0]
    assert proc.returncode == -signal.SIGKILL, output
    try:
        resp = wait_until(
            "the app to read FAILED",
            lambda: (r := sched.describe(app_id)) is not None and r.state == AppState.FAILED and r,
        )
        assert resp.msg == (
            "app half-created: main[1] has no Job (its submitter stopped before creating them);"
            " run it again"
        )
        states = {r.id: r.state for r in resp.roles_statuses[0].replicas}
        assert states == {0: AppState.RUNNING, 1: AppState.FAILED}
        assert resp.roles[0].num_replicas == 2
        (listed,) = [a for a in sched.list({"namespace": ns}) if a.app_id == app_id]
        assert listed.state == AppState.FAILED
        assert "pods" in leftovers(client, ns, name)  # rank 0 still waits for its peer
        sched.cancel(app_id)
        wait_until("rank 0's pod to stop", lambda: "pods" not in leftovers(client, ns, name))
        resp = sched.describe(app_id)  # rank 0's pod is gone: the app still says why it failed
        assert resp.state == AppState.FAILED and resp.msg.startswith("app half-created: main[1]")
    finally:
        sched.delete(app_id)
    wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))
