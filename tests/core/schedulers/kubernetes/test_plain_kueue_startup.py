"""Plain mode with Kueue and the startup timeout, on the real ``V1Job``/``V1Pod`` models.

The Jobs are the dry run's own ``V1Job`` objects with a status added; the API classes are small
fakes returning them (``test_live_jobset_kueue.py`` runs the same paths on a real cluster).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from torchx.schedulers._kubernetes.plain import ANNOTATION_STOPPED
from torchx.schedulers._kubernetes.plain_ops import PlainOps
from torchx.schedulers.kubernetes_scheduler import create_scheduler
from torchx.specs.api import AppDef, AppState, Role

k8s = pytest.importorskip("kubernetes.client")


def submitted(**cfg: Any) -> list[Any]:
    app = AppDef("one", [Role("main", "busybox:1.36", entrypoint="true")])
    info = create_scheduler("t").submit_dryrun(
        app, {"mode": "plain", "validate_spec": False, **cfg}
    )
    jobs = info.request.resource.jobs
    for job in jobs:
        job.metadata.uid = "job-uid"
    return list(jobs)


def pulling_pod(job: Any) -> Any:
    waiting = k8s.V1ContainerStateWaiting(reason="ImagePullBackOff", message="Back-off pulling")
    status = k8s.V1ContainerStatus(
        name="main-0",
        image="x",
        image_id="",
        ready=False,
        restart_count=0,
        state=k8s.V1ContainerState(waiting=waiting),
    )
    meta = k8s.V1ObjectMeta(
        name="p",
        labels={**job.metadata.labels, "job-name": job.metadata.name},
        creation_timestamp=datetime(2026, 1, 1, tzinfo=UTC),
    )
    return k8s.V1Pod(
        metadata=meta, status=k8s.V1PodStatus(phase="Pending", container_statuses=[status])
    )


class Fake:
    def __init__(self, jobs: list[Any], pods: list[Any], workloads: list[Any]) -> None:
        self.jobs, self.pods, self.workloads = jobs, pods, workloads
        self.patches: list[Any] = []

    def list_namespaced_job(self, *args: Any, **kw: Any) -> Any:
        return k8s.V1JobList(items=self.jobs)

    def list_namespaced_pod(self, *args: Any, **kw: Any) -> Any:
        return k8s.V1PodList(items=self.pods, metadata=k8s.V1ListMeta(resource_version="1"))

    def list_namespaced_event(self, *args: Any, **kw: Any) -> Any:
        return k8s.CoreV1EventList(items=[])

    def list_namespaced_custom_object(self, *args: Any, **kw: Any) -> Any:
        return {"items": self.workloads}

    def patch_namespaced_job(self, name: str, namespace: str, body: Any) -> None:
        self.patches.append(body)


def ops(fake: Fake) -> PlainOps:
    o = PlainOps(lambda: None)
    o.__dict__.update(_batch=fake, _core=fake, _custom=fake)
    return o


def test_queued_job_reads_kueue_message() -> None:
    (job,) = submitted(queue="lq")
    wl = {
        "metadata": {"name": "wl", "ownerReferences": [{"uid": "job-uid"}]},
        "spec": {"queueName": "lq"},
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "False", "message": "insufficient quota"}
            ]
        },
    }
    job.status = k8s.V1JobStatus()
    desc = ops(Fake([job], [], [wl])).describe(
        "default", job.metadata.labels["app.kubernetes.io/instance"]
    )
    assert desc is not None and desc.state == AppState.PENDING
    assert desc.msg == "waiting for Kueue admission in queue lq: insufficient quota"


def test_startup_timeout_fails_then_stops_the_replica() -> None:
    (job,) = submitted(startup_timeout=30.0)
    name = job.metadata.labels["app.kubernetes.io/instance"]
    job.status = k8s.V1JobStatus(start_time=datetime.now(UTC))
    fake = Fake([job], [pulling_pod(job)], [])
    desc = ops(fake).describe("default", name)
    assert desc is not None and desc.state == AppState.PENDING
    assert "ImagePullBackOff: Back-off pulling" in desc.msg
    job.status = k8s.V1JobStatus(start_time=datetime(2026, 1, 1, tzinfo=UTC))
    desc = ops(fake).describe("default", name)
    assert desc is not None and desc.state == AppState.FAILED
    assert desc.msg.startswith("not started within startup_timeout=30s: main[0] ImagePullBackOff")
    ops(fake).enforce_fail_fast("default", name)
    (body,) = fake.patches
    assert body["spec"] == {"parallelism": 0}
    assert body["metadata"]["annotations"][ANNOTATION_STOPPED] == "startup-timeout"
    # once stopped (pod gone) the app still reads FAILED with the reason
    job.metadata.annotations = {
        **(job.metadata.annotations or {}),
        **body["metadata"]["annotations"],
    }
    fake.pods = []
    desc = ops(fake).describe("default", name)
    assert desc is not None and desc.state == AppState.FAILED
    assert "startup_timeout=30s" in desc.msg
