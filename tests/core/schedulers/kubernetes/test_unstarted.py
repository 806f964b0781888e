"""Unstarted pods of a stopped app lose their grace period (``_kubernetes.unstarted``).

The pods are the kubernetes client's own model classes; the API is a small fake that keeps
resource versions and the controller's deletion marks as the API server does.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from torchx.schedulers._kubernetes.unstarted import delete_unstarted_pods, never_started

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def waiting(reason: str = "ImagePullBackOff") -> client.V1ContainerState:
    return client.V1ContainerState(waiting=client.V1ContainerStateWaiting(reason=reason))


def pod(
    name: str,
    phase: str = "Pending",
    state: client.V1ContainerState | None = None,
    last: client.V1ContainerState | None = None,
    marked: bool = True,
) -> client.V1Pod:
    statuses = [
        client.V1ContainerStatus(
            name="c",
            image="x",
            image_id="",
            ready=False,
            restart_count=0,
            started=False,
            state=state or waiting(),
            last_state=last or client.V1ContainerState(),
        )
    ]
    meta = client.V1ObjectMeta(
        name=name,
        resource_version="1",
        deletion_timestamp=NOW if marked else None,
        deletion_grace_period_seconds=30 if marked else None,
    )
    return client.V1Pod(
        metadata=meta, status=client.V1PodStatus(phase=phase, container_statuses=statuses)
    )


class FakeCore:
    """``list_namespaced_pod`` and ``delete_namespaced_pod`` with resourceVersion preconditions."""

    def __init__(self, *pods: client.V1Pod) -> None:
        self.pods = {p.metadata.name: p for p in pods}
        self.deleted: list[str] = []
        self.on_list: Any = None

    def list_namespaced_pod(self, namespace: str, label_selector: str) -> client.V1PodList:
        if self.on_list is not None:
            self.on_list(self)
        return client.V1PodList(items=list(self.pods.values()))

    def delete_namespaced_pod(self, name: str, namespace: str, body: dict[str, Any]) -> None:
        found = self.pods.get(name)
        if found is None:
            raise ApiException(status=404)
        if body["preconditions"]["resourceVersion"] != found.metadata.resource_version:
            raise ApiException(status=409)
        assert body["gracePeriodSeconds"] == 0
        self.deleted.append(name)
        del self.pods[name]


def run(core: FakeCore) -> int:
    return delete_unstarted_pods(core, "ns", "app=a", ApiException, sleep=lambda _: None)


def started(**kw: Any) -> client.V1ContainerState:
    return client.V1ContainerState(**kw)


@pytest.mark.parametrize(
    "p, expected",
    [
        (pod("a"), True),
        (pod("a", state=waiting("CreateContainerConfigError")), True),
        (pod("a", phase="Running"), False),
        (pod("a", state=started(running=client.V1ContainerStateRunning())), False),
        (pod("a", last=started(terminated=client.V1ContainerStateTerminated(exit_code=1))), False),
        (client.V1Pod(metadata=client.V1ObjectMeta(name="a")), False),
    ],
)
def test_never_started(p: client.V1Pod, expected: bool) -> None:
    assert never_started(p) is expected


def test_a_marked_unstarted_pod_goes_at_once_and_a_running_one_keeps_its_grace() -> None:
    core = FakeCore(pod("pull"), pod("runs", phase="Running"))
    assert run(core) == 1
    assert core.deleted == ["pull"] and list(core.pods) == ["runs"]


def test_a_pod_the_controller_has_not_marked_is_left_to_it() -> None:
    core = FakeCore(pod("pull", marked=False))
    assert run(core) == 0
    assert core.deleted == [] and list(core.pods) == ["pull"]


def test_waits_for_the_controller_mark_then_deletes() -> None:
    core = FakeCore(pod("pull", marked=False))
    lists = []

    def controller(fake: FakeCore) -> None:
        lists.append(1)
        if len(lists) == 3:  # the controller's delete: a new version and the mark
            fake.pods["pull"] = pod("pull")
            fake.pods["pull"].metadata.resource_version = "2"

    core.on_list = controller
    assert run(core) == 1 and core.deleted == ["pull"] and len(lists) == 3


def test_a_pod_that_changed_since_the_read_is_read_again() -> None:
    core = FakeCore(pod("pull"))
    original_delete = core.delete_namespaced_pod
    versions: list[str] = []

    def delete(name: str, namespace: str, body: dict[str, Any]) -> None:
        versions.append(body["preconditions"]["resourceVersion"])
        if len(versions) == 1:  # a kubelet status update between the read and the delete
            core.pods[name].metadata.resource_version = "2"
        original_delete(name, namespace, body)

    core.delete_namespaced_pod = delete  # type: ignore[method-assign]
    assert run(core) == 1
    assert versions == ["1", "2"] and core.deleted == ["pull"]


def test_a_pod_that_started_meanwhile_is_not_cut_short() -> None:
    core = FakeCore(pod("pull"))

    def started_now(name: str, namespace: str, body: dict[str, Any]) -> None:
        # the kubelet started the container between the read and the delete
        core.pods[name] = pod(name, phase="Running")
        core.pods[name].metadata.resource_version = "2"
        raise ApiException(status=409)

    core.delete_namespaced_pod = started_now  # type: ignore[method-assign]
    assert run(core) == 0
    assert list(core.pods) == ["pull"] and core.pods["pull"].status.phase == "Running"


def test_an_account_that_may_not_delete_pods_leaves_them_to_the_controller() -> None:
    core = FakeCore(pod("pull"))

    def forbidden(name: str, namespace: str, body: dict[str, Any]) -> None:
        raise ApiException(status=403)

    core.delete_namespaced_pod = forbidden  # type: ignore[method-assign]
    assert run(core) == 0
    assert list(core.pods) == ["pull"]


def test_other_api_errors_are_raised() -> None:
    core = FakeCore(pod("pull"))

    def broken(name: str, namespace: str, body: dict[str, Any]) -> None:
        raise ApiException(status=500)

    core.delete_namespaced_pod = broken  # type: ignore[method-assign]
    with pytest.raises(ApiException):
        run(core)
