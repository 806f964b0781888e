"""Cancelling an app whose pods never started leaves no pod behind for long (live).

A pod whose image cannot be pulled has nothing to stop, yet with its grace period a 1.20
kubelet kept it ``Terminating`` for about a minute after cancel (its pull back-off). The
scheduler cuts that grace period to 0 once the controller deletes the pod
(``_kubernetes.unstarted``; its rules: test_unstarted.py): the pods are gone within seconds.
A timeout of 30 s told the two apart on the 1.20 cluster the project used to run (with the cut
disabled that test failed); the 1.35 kubelet removes such a pod within it even without the cut,
so these tests (plain and JobSet modes) check the outcome, not the cut itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _k8s_live import leftovers, namespace, says_pull_error, wait_until

from torchx.specs.api import AppDef, AppState, Resource, Role

pytestmark = pytest.mark.slow

UNPULLABLE = "torchx-flow/not-there:1"
GONE_WITHIN = 30.0  # the pull back-off kept the pod about 60 s


@pytest.fixture(scope="module")
def current_client() -> Iterator[Any]:
    from _k8s_current import module_client

    yield from module_client()


def cancel_and_watch_pods_go(client: Any, mode: str) -> None:
    """Runs an unpullable app in ``mode``, cancels it once its pod waits, sees the pod go."""
    from torchx.runner import get_runner

    role = Role(
        "worker", image=UNPULLABLE, entrypoint="true", resource=Resource(cpu=0.1, gpu=0, memMB=32)
    )
    with namespace(client, prefix="tx-unstarted") as ns, get_runner() as runner:
        cfg = {"mode": mode, "namespace": ns, "rank0_address": "pod_ip"}
        handle = runner.run(AppDef("nopull", roles=[role]), "kubernetes", cfg)
        name = handle.rsplit(":", 1)[1]
        try:
            wait_until("the pod to wait for its image", lambda: _pull_waits(runner, handle), 120)
            runner.cancel(handle)
            wait_until(
                "the unstarted pod to go after cancel",
                lambda: "pods" not in leftovers(client, ns, name),
                GONE_WITHIN,
            )
            status = runner.status(handle)
            assert status is not None and status.state == AppState.CANCELLED, status
        finally:
            runner.delete(handle)
        wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))


def _pull_waits(runner: Any, handle: str) -> bool:
    status = runner.status(handle)
    return status is not None and says_pull_error(status.msg)


@pytest.mark.k8s
@pytest.mark.parametrize("mode", ["plain", "jobset"])
def test_cancel_removes_an_unpullable_pod_at_once(current_client: Any, mode: str) -> None:
    cancel_and_watch_pods_go(current_client, mode)
