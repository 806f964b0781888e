"""Plain-mode state reading (``_kubernetes/plain_status.py``) on real kubernetes client models."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Optional

import pytest

from torchx.schedulers._kubernetes.plain import ANNOTATION_STOPPED
from torchx.schedulers._kubernetes.plain_status import (
    app_state,
    failure,
    replica_errors,
    replica_state,
    replica_views,
    role_statuses,
    roles,
)
from torchx.specs.api import NONE, AppState

k8s = pytest.importorskip("kubernetes.client")


def job(
    name: str,
    replica: int = 0,
    conditions: tuple[str, ...] = (),
    failed: int = 0,
    backoff: int = 0,
    stopped: Optional[str] = None,
) -> Any:
    labels = {
        "torchx.pytorch.org/role-name": "worker",
        "torchx.pytorch.org/role-index": "0",
        "torchx.pytorch.org/replica-id": str(replica),
    }
    annotations = {ANNOTATION_STOPPED: stopped} if stopped else None
    container = k8s.V1Container(name="c", image="img:1")
    template = k8s.V1PodTemplateSpec(spec=k8s.V1PodSpec(containers=[container]))
    return k8s.V1Job(
        metadata=k8s.V1ObjectMeta(name=name, labels=labels, annotations=annotations),
        spec=k8s.V1JobSpec(template=template, backoff_limit=backoff),
        status=k8s.V1JobStatus(
            failed=failed or None,
            conditions=[k8s.V1JobCondition(type=c, status="True") for c in conditions] or None,
        ),
    )


def pod(job_name: str, phase: str, exit_code: Optional[int] = None, **term: Any) -> Any:
    statuses = None
    if exit_code is not None:
        terminated = k8s.V1ContainerStateTerminated(exit_code=exit_code, **term)
        state = k8s.V1ContainerState(terminated=terminated)
        statuses = [
            k8s.V1ContainerStatus(
                name="c", image="img:1", image_id="", ready=False, restart_count=0, state=state
            )
        ]
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(
            name=f"{job_name}-x",
            labels={"job-name": job_name},
            creation_timestamp=datetime.now(UTC),
        ),
        status=k8s.V1PodStatus(phase=phase, pod_ip="10.0.0.7", container_statuses=statuses),
    )


def test_replica_state_from_job_then_pod() -> None:
    assert replica_state(job("j", conditions=("Complete",)), None) == AppState.SUCCEEDED
    assert replica_state(job("j", conditions=("Failed",)), None) == AppState.FAILED
    assert replica_state(job("j", stopped="cancelled"), None) == AppState.CANCELLED
    assert replica_state(job("j"), None) == AppState.PENDING
    assert replica_state(job("j"), pod("j", "Pending")) == AppState.PENDING
    assert replica_state(job("j"), pod("j", "Running")) == AppState.RUNNING
    assert replica_state(job("j"), pod("j", "Succeeded")) == AppState.SUCCEEDED
    # a failed pod with retries left is a restart on the way; without, the replica failed
    assert replica_state(job("j", failed=1, backoff=2), pod("j", "Failed")) == AppState.PENDING
    assert replica_state(job("j", failed=1), pod("j", "Failed")) == AppState.FAILED


def test_app_state() -> None:
    S = AppState
    assert app_state([]) == S.UNKNOWN
    assert app_state([S.RUNNING, S.FAILED]) == S.FAILED
    assert app_state([S.RUNNING, S.PENDING], cancelled=True) == S.CANCELLED
    assert app_state([S.FAILED, S.CANCELLED], cancelled=True) == S.FAILED
    assert app_state([S.SUCCEEDED, S.SUCCEEDED]) == S.SUCCEEDED
    assert app_state([S.SUCCEEDED, S.PENDING]) == S.RUNNING
    assert app_state([S.PENDING, S.PENDING]) == S.PENDING


def test_first_failure_is_the_structured_error() -> None:
    early = datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)
    late = datetime(2026, 1, 1, 0, 0, 9, tzinfo=UTC)
    jobs = [job("a-0", 0, ("Failed",)), job("a-1", 1, ("Failed",))]
    pods = [
        pod("a-0", "Failed", 137, reason="Error", finished_at=late),
        pod("a-1", "Failed", 3, reason="Error", message="boom\n", finished_at=early),
    ]
    views = replica_views(jobs, pods)
    msg, error = failure(views)
    assert msg == "worker[1] exited with code 3 (Error)"
    assert json.loads(error) == {"message": "boom", "errorCode": 3, "timestamp": 1767225601}
    errors = replica_errors(views)
    assert errors[1] == error and json.loads(errors[0])["errorCode"] == 137
    statuses = role_statuses(views, errors)
    assert [(r.id, r.state, r.hostname) for r in statuses[0].replicas] == [
        (0, AppState.FAILED, "10.0.0.7"),
        (1, AppState.FAILED, "10.0.0.7"),
    ]
    assert statuses[0].replicas[1].structured_error_msg == error
    assert [(r.name, r.image, r.num_replicas) for r in roles(views)] == [("worker", "img:1", 2)]


def test_no_failure() -> None:
    views = replica_views([job("a-0", conditions=("Complete",))], [])
    assert failure(views) == (NONE, NONE)


def _pod(name: str, created: datetime, phase: str) -> Any:
    meta = k8s.V1ObjectMeta(name=name, labels={"job-name": "j"}, creation_timestamp=created)
    return k8s.V1Pod(metadata=meta, status=k8s.V1PodStatus(phase=phase))


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_newest_pod_of_a_retry_created_in_the_same_second(order: tuple[int, int]) -> None:
    from torchx.schedulers._kubernetes.plain_status import newest_pods

    second = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    pods = [_pod("j-old", second, "Failed"), _pod("j-new", second, "Running")]
    picked = newest_pods([pods[i] for i in order])["j"]
    assert picked.metadata.name == "j-new"
    later = _pod("j-later", datetime(2026, 1, 1, 12, 0, 1, tzinfo=UTC), "Failed")
    assert newest_pods([*pods, later])["j"].metadata.name == "j-later"
