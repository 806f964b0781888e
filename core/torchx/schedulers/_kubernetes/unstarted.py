"""Pods that never started a container, removed at once when their app is stopped or deleted.

Stopping an app (cancel, fail-fast, ``startup_timeout``) or deleting it leaves its pods to the
Job or JobSet controller, which deletes each with its termination grace period. A pod whose
image cannot be pulled, or that was never scheduled, has no process to signal, yet the kubelet
can keep it ``Terminating`` until its pull back-off ends: about a minute on the local 1.20
cluster (the 1.35 kubelet let it go within seconds), during which ``kubectl get pods`` and
the namespace still show the app. Once the controller has marked such a pod for deletion, its
grace period is cut to 0 here.

Only pods the controller is already deleting are touched: deleting a pod of a Job that has not
yet seen its stop could make the controller create a replacement. A pod that starts a container
between the read and the delete keeps its grace period: the delete carries the read's
``resourceVersion`` as a precondition, the kubelet's status update that records the start
changes it, and the API server refuses the delete (409); the pod is read again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Optional

__all__ = ["delete_unstarted_pods", "never_started"]

WAIT_FOR_CONTROLLER = 3.0
"""Seconds to wait for the controller to mark an app's unstarted pods for deletion."""


def never_started(pod: Any) -> bool:
    """Whether ``pod`` (a ``V1Pod``) is Pending and none of its containers ever ran."""
    status = pod.status
    if status is None or status.phase != "Pending":
        return False
    containers = [*(status.init_container_statuses or []), *(status.container_statuses or [])]
    for container in containers:
        if container.started:
            return False
        for state in (container.state, container.last_state):
            if state is not None and (state.running is not None or state.terminated is not None):
                return False
    return True


def delete_unstarted_pods(
    core: Any,
    namespace: str,
    selector: str,
    api_error: type[BaseException],
    sleep: Callable[[float], None] = time.sleep,
    timeout: float = WAIT_FOR_CONTROLLER,
) -> int:
    """Cuts to 0 the grace period of the unstarted pods of ``selector`` being deleted.

    Polls every 0.2 s, for at most ``timeout`` seconds, until no pod of ``selector`` that never
    started waits for the controller's delete.

    Args:
        core: a ``kubernetes.client.CoreV1Api``.
        namespace: the app's namespace.
        selector: the label selector of the app's pods.
        api_error: the client's ``ApiException`` class. A 404 (already gone) or 403 (the
            account may not delete pods: ``deploy/kfp-launcher-rbac.yaml`` before this grant)
            leaves the pod to the controller; a 409 (changed since it was read) is read again
            at the next poll.
        sleep: how to wait between polls.
        timeout: how long to wait for the controller to mark the pods.

    Returns:
        How many pods were deleted at once.
    """
    deadline, deleted = time.monotonic() + timeout, 0
    while True:
        pods = core.list_namespaced_pod(namespace, label_selector=selector).items
        todo = [
            p for p in pods if p.metadata.deletion_grace_period_seconds != 0 and never_started(p)
        ]
        results = [
            _delete_now(core, namespace, pod, api_error)
            for pod in todo
            if pod.metadata.deletion_timestamp is not None
        ]
        deleted += results.count(True)
        if results.count(None) == 0 and len(results) == len(todo):
            return deleted
        if time.monotonic() >= deadline:
            return deleted
        sleep(0.2)


def _delete_now(
    core: Any, namespace: str, pod: Any, api_error: type[BaseException]
) -> Optional[bool]:
    """Deletes ``pod`` with grace 0: True; gone or not allowed: False; changed since read: None."""
    body = {
        "gracePeriodSeconds": 0,
        "preconditions": {"resourceVersion": pod.metadata.resource_version},
    }
    try:
        core.delete_namespaced_pod(pod.metadata.name, namespace, body=body)
    except api_error as e:
        status = getattr(e, "status", None)
        if status in (403, 404):  # not allowed (an older RBAC role): left to the controller
            return False
        if status == 409:
            return None
        raise
    return True
