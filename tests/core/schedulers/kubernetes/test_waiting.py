"""Why a replica waits (``_kubernetes/waiting.py``) on real kubernetes client models, and how
both modes' ``describe`` carry it into ``AppStatus.msg`` and the replica's status."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Optional

import pytest

from torchx.schedulers._kubernetes.plain_status import replica_views, role_statuses
from torchx.schedulers._kubernetes.plain_status import waiting_status as plain_waiting
from torchx.schedulers._kubernetes.volcano_status import describe_vcjob
from torchx.schedulers._kubernetes.waiting import (
    MAX_EVENT_READS,
    event_reason,
    pending_message,
    pod_reason,
    replica_reasons,
    waiting_error,
)
from torchx.specs.api import NONE, AppState, AppStatus

k8s = pytest.importorskip("kubernetes.client")

PULL = 'Back-off pulling image "torchx-flow/busybox:latest"'
NO_CPU = "0/1 nodes are available: 1 Insufficient cpu."


def container(reason: Optional[str], message: Optional[str] = None, name: str = "c") -> Any:
    waiting = k8s.V1ContainerStateWaiting(reason=reason, message=message)
    return k8s.V1ContainerStatus(
        name=name,
        image="img",
        image_id="",
        ready=False,
        restart_count=0,
        state=k8s.V1ContainerState(waiting=waiting),
    )


def pod(
    name: str = "app-worker-0-x",
    containers: tuple[Any, ...] = (),
    init: tuple[Any, ...] = (),
    scheduled: Optional[tuple[str, str, Optional[str]]] = None,
    phase: str = "Pending",
) -> Any:
    conditions = None
    if scheduled is not None:
        status, reason, message = scheduled
        conditions = [
            k8s.V1PodCondition(type="PodScheduled", status=status, reason=reason, message=message)
        ]
    meta = k8s.V1ObjectMeta(
        name=name,
        labels={"job-name": name.rsplit("-", 1)[0]},
        creation_timestamp=datetime.now(UTC),
    )
    status = k8s.V1PodStatus(
        phase=phase,
        conditions=conditions,
        container_statuses=list(containers) or None,
        init_container_statuses=list(init) or None,
    )
    return k8s.V1Pod(metadata=meta, status=status)


def event(kind: str, reason: str, message: str, second: int) -> Any:
    return k8s.CoreV1Event(
        metadata=k8s.V1ObjectMeta(name=f"e{second}"),
        involved_object=k8s.V1ObjectReference(kind="Pod", name="p"),
        type=kind,
        reason=reason,
        message=message,
        last_timestamp=datetime(2026, 1, 1, 0, 0, second, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    "reason", ["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError"]
)
def test_a_container_waiting_for_an_error_is_the_reason(reason: str) -> None:
    stuck = pod(containers=(container(reason, "the kubelet's\nmessage  "),))
    assert pod_reason(stuck) == f"{reason}: the kubelet's message"  # one line


def test_normal_startup_waits_are_not_reasons() -> None:
    for normal in ("ContainerCreating", "PodInitializing"):
        assert pod_reason(pod(containers=(container(normal),))) == ""
    assert pod_reason(pod(scheduled=("True", "", None))) == ""
    assert pod_reason(k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="p"))) == ""


def test_init_containers_first_then_unschedulable() -> None:
    both = pod(
        containers=(container("PodInitializing"),),
        init=(container("ImagePullBackOff", PULL, name="init"),),
    )
    assert pod_reason(both) == f"ImagePullBackOff: {PULL}"
    assert pod_reason(pod(scheduled=("False", "Unschedulable", NO_CPU))) == (
        f"Unschedulable: {NO_CPU}"
    )


def test_a_long_message_is_cut() -> None:
    reason = pod_reason(pod(containers=(container("ErrImagePull", "x" * 1000),)))
    assert len(reason) == 300 and reason.endswith("...")


def test_the_newest_warning_event_is_the_reason() -> None:
    events = [
        event("Warning", "FailedMount", "configmap 'cfg' not found", 2),
        event("Warning", "FailedScheduling", NO_CPU, 3),
        event("Normal", "Pulling", "pulling image", 4),
    ]
    assert event_reason(events) == f"FailedScheduling: {NO_CPU}"
    # once the pod is scheduled, its old FailedScheduling events are stale
    assert event_reason(events, scheduled=True) == "FailedMount: configmap 'cfg' not found"
    assert event_reason(events[2:]) == ""


def test_events_are_read_only_for_a_few_replicas_without_a_pod_reason() -> None:
    reads: list[tuple[str, str]] = []

    def read(kind: str, name: str) -> list[Any]:
        reads.append((kind, name))
        return [event("Warning", "FailedCreate", f"quota exceeded for {name}", 1)]

    stuck = pod("p0", containers=(container("ErrImagePull", "denied"),))
    starting = [pod(f"p{i}", containers=(container("ContainerCreating"),)) for i in (1, 2, 3)]
    pending = [
        (stuck, "Pod", "p0"),
        *[(p, "Pod", p.metadata.name) for p in starting],
        (None, "Job", "j4"),
    ]
    found = replica_reasons(pending, read)
    assert reads == [("Pod", "p1"), ("Pod", "p2")] and MAX_EVENT_READS == 2
    assert found == {
        0: "ErrImagePull: denied",
        1: "FailedCreate: quota exceeded for p1",
        2: "FailedCreate: quota exceeded for p2",
    }


def test_pending_message_names_the_first_replicas() -> None:
    reasons = [(f"worker[{i}]", f"Unschedulable: {NO_CPU}") for i in range(5)]
    assert pending_message(reasons[:1]) == f"worker[0] Unschedulable: {NO_CPU}"
    message = pending_message(reasons)
    assert message.count("Unschedulable") == 3 and message.endswith("(and 2 more waiting)")
    assert pending_message([]) == ""


def job(name: str, replica: int) -> Any:
    labels = {
        "torchx.pytorch.org/role-name": "worker",
        "torchx.pytorch.org/role-index": "0",
        "torchx.pytorch.org/replica-id": str(replica),
    }
    template = k8s.V1PodTemplateSpec(spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c")]))
    return k8s.V1Job(
        metadata=k8s.V1ObjectMeta(name=name, labels=labels),
        spec=k8s.V1JobSpec(template=template),
        status=k8s.V1JobStatus(),
    )


def test_plain_mode_status_says_why_each_replica_waits() -> None:
    jobs = [job("app-worker-0", 0), job("app-worker-1", 1), job("app-worker-2", 2)]
    pods = [
        pod("app-worker-0-x", phase="Running"),
        pod("app-worker-1-x", scheduled=("False", "Unschedulable", NO_CPU)),
    ]  # worker-2 has no pod yet: its Job's events say why
    views = replica_views(jobs, pods)
    reads: list[tuple[str, str]] = []

    def read(kind: str, name: str) -> list[Any]:
        reads.append((kind, name))
        return []

    msg, errors = plain_waiting(views, read)
    assert msg == f"worker[1] Unschedulable: {NO_CPU}"
    assert reads == [("Job", "app-worker-2")]
    assert errors == {1: waiting_error(f"Unschedulable: {NO_CPU}")}
    status = AppStatus(AppState.RUNNING, msg=msg, roles=role_statuses(views, errors))
    replicas = status.roles[0].replicas
    assert [r.state for r in replicas] == [AppState.RUNNING, AppState.PENDING, AppState.PENDING]
    assert json.loads(replicas[1].structured_error_msg) == {"message": f"Unschedulable: {NO_CPU}"}
    assert replicas[2].structured_error_msg == NONE
    assert NO_CPU in status.format()
    assert plain_waiting(replica_views(jobs[:1], pods[:1]), read) == (NONE, {})


def test_volcano_mode_status_says_why_each_replica_waits() -> None:
    vcjob = {
        "metadata": {"name": "app"},
        "spec": {"tasks": [{"name": "worker-0"}, {"name": "worker-1"}]},
        "status": {
            "state": {"phase": "Pending", "message": "1/2 tasks in gang unschedulable"},
            "taskStatusCount": {"worker-0": {"phase": {"Pending": 1}}},
        },
    }
    waiting = {"app-worker-0-0": f"ImagePullBackOff: {PULL}"}
    desc = describe_vcjob("ns:app", vcjob, lambda _: "", waiting)
    assert desc.msg == (f"1/2 tasks in gang unschedulable; worker[0] ImagePullBackOff: {PULL}")
    replicas = desc.roles_statuses[0].replicas
    assert json.loads(replicas[0].structured_error_msg)["message"] == waiting["app-worker-0-0"]
    assert replicas[1].structured_error_msg == NONE
    vcjob["status"]["state"] = {"phase": "Pending"}
    assert describe_vcjob("ns:app", vcjob, lambda _: "").msg == NONE
