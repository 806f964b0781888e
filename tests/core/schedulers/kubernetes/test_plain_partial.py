"""A half-created plain-mode app (``_kubernetes/plain_partial.py``, ``plain_submit.py``).

The objects are the real ``kubernetes.client`` models the dry run builds; the API server is an
in-memory stand-in that stores what is created and answers label-selected lists (the live
test, ``test_live_partial.py``, does the same on the real cluster).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, Optional

import pytest

pytest.importorskip("kubernetes")

from kubernetes import client as k8s

from torchx.schedulers._kubernetes.names import (
    ANNOTATION_ROLE_REPLICAS,
    ANNOTATION_SUBMIT_MARGIN,
    ANNOTATION_SUBMIT_WAIT,
    ANNOTATION_SUBMITTED_AT,
)
from torchx.schedulers._kubernetes.plain_ops import PlainOps
from torchx.schedulers._kubernetes.plain_partial import Partial, check, read_submission
from torchx.schedulers._kubernetes.plain_submit import (
    RANK0_IP_TIMEOUT,
    SUBMIT_MARGIN,
    SubmitTiming,
)
from torchx.schedulers.kubernetes_scheduler import create_scheduler
from torchx.specs.api import NONE, AppDef, AppState, Resource, Role

NS = "ml"


class Api:
    """Stores created Services and Jobs, lists them (and pods) by label selector."""

    def __init__(self) -> None:
        self.jobs: dict[str, Any] = {}
        self.pods: list[Any] = []
        self.services: dict[str, Any] = {}

    def create_namespaced_service(self, ns: str, service: Any, **kw: Any) -> None:
        self.services[service.metadata.name] = service

    def create_namespaced_job(self, ns: str, job: Any, **kw: Any) -> None:
        self.jobs[job.metadata.name] = job

    @staticmethod
    def _match(obj: Any, selector: str) -> bool:
        labels = obj.metadata.labels or {}
        return all(
            labels.get(k) == v for k, _, v in (x.partition("=") for x in selector.split(","))
        )

    def list_namespaced_job(self, ns: str, label_selector: str, **kw: Any) -> Any:
        items = [j for j in self.jobs.values() if self._match(j, label_selector)]
        return k8s.V1JobList(items=items)

    def list_namespaced_pod(self, ns: str, label_selector: str, **kw: Any) -> Any:
        items = [p for p in self.pods if self._match(p, label_selector)]
        return k8s.V1PodList(items=items, metadata=k8s.V1ListMeta(resource_version="1"))

    def list_namespaced_event(self, ns: str, **kw: Any) -> Any:
        return k8s.CoreV1EventList(items=[])

    def patch_namespaced_job(self, name: str, ns: str, body: dict[str, Any]) -> None:
        job = self.jobs[name]
        annotations = body["metadata"]["annotations"]
        job.metadata.annotations = {**(job.metadata.annotations or {}), **annotations}
        job.spec.parallelism = body["spec"]["parallelism"]


def app(workers: int = 2, ps: int = 0) -> AppDef:
    def role(name: str, n: int) -> Role:
        return Role(name, image="img:1", entrypoint="sh", args=["-c", "sleep 60"], num_replicas=n,
                    resource=Resource(cpu=1, gpu=0, memMB=256))  # fmt: skip

    return AppDef("half", roles=[role("worker", workers), *([role("ps", ps)] if ps else [])])


def submit(
    api: Api, a: AppDef, margin: float = SUBMIT_MARGIN, rank0_address: str = "dns"
) -> tuple[PlainOps, str]:
    """Submit ``a`` through ``PlainOps.create`` on ``api`` (rank 0's pod gets an IP at once)."""
    cfg = {"mode": "plain", "validate_spec": False, "namespace": NS, "rank0_address": rank0_address}
    request = create_scheduler("test").submit_dryrun(a, cfg).request
    ops = PlainOps(lambda: None, sleep=lambda s: None, timing=SubmitTiming(margin=margin))
    ops.__dict__["_batch"] = ops.__dict__["_core"] = api  # the cached API objects
    if rank0_address == "pod_ip":
        api.pods.append(pod(request.resource.jobs[0], "Pending"))
    return ops, ops.create(NS, request)


def pod(job: Any, phase: str, started: Optional[datetime] = None) -> Any:
    """A pod of ``job`` (its template's labels and ``job-name``)."""
    state = None
    if started is not None:
        state = k8s.V1ContainerState(running=k8s.V1ContainerStateRunning(started_at=started))
    status = k8s.V1ContainerStatus(
        name="c", image="img:1", image_id="", ready=True, restart_count=0, state=state
    )
    labels = {**job.spec.template.metadata.labels, "job-name": job.metadata.name}
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(
            name=f"{job.metadata.name}-p", labels=labels, creation_timestamp=started
        ),
        status=k8s.V1PodStatus(phase=phase, pod_ip="10.1.0.5", container_statuses=[status]),
    )


def drop(api: Api, *suffixes: str) -> None:
    """As if the submitter died before creating these Jobs."""
    for name in [n for n in api.jobs if n.endswith(suffixes)]:
        del api.jobs[name]


def replicas(resp: Any) -> dict[str, AppState]:
    return {f"{r.role}[{r.id}]": r.state for s in resp.roles_statuses for r in s.replicas}


def test_every_object_records_the_roles_the_start_and_the_grace() -> None:
    api = Api()
    before = datetime.now(UTC)
    submit(api, app(workers=2, ps=1), margin=45, rank0_address="pod_ip")
    objects = [*api.services.values(), *api.jobs.values()]
    assert len(objects) == 4
    for obj in objects:
        notes = obj.metadata.annotations
        assert notes[ANNOTATION_ROLE_REPLICAS] == "worker=2,ps=1"
        assert notes[ANNOTATION_SUBMIT_WAIT] == f"{RANK0_IP_TIMEOUT:g}"  # pod_ip: rank 0 first
        assert notes[ANNOTATION_SUBMIT_MARGIN] == "45"
        started = datetime.fromisoformat(notes[ANNOTATION_SUBMITTED_AT])
        assert before - timedelta(seconds=1) <= started <= datetime.now(UTC)
    sub = read_submission(api.jobs.values())
    assert sub is not None and sub.roles == (("worker", 2), ("ps", 1))
    assert sub.deadline == pytest.approx(sub.started + RANK0_IP_TIMEOUT + 45)


def test_dns_submission_does_not_wait_so_its_grace_is_the_margin() -> None:
    api = Api()
    submit(api, app(workers=2))
    assert {j.metadata.annotations[ANNOTATION_SUBMIT_WAIT] for j in api.jobs.values()} == {"0"}


def test_a_complete_app_reads_as_before() -> None:
    api = Api()
    ops, name = submit(api, app(workers=2, ps=1), margin=0)
    resp = ops.describe(NS, name)
    assert resp is not None and resp.state == AppState.PENDING
    assert "have no Job" not in resp.msg and "not created" not in resp.msg
    assert replicas(resp) == {"worker[0]": AppState.PENDING, "worker[1]": AppState.PENDING,
                              "ps[0]": AppState.PENDING}  # fmt: skip
    assert check(list(api.jobs.values()), None, 1e12) is None  # complete, however late


def test_missing_jobs_within_the_grace_are_pending_and_named() -> None:
    api = Api()
    ops, name = submit(api, app(workers=3), margin=3600)
    drop(api, "-worker-1", "-worker-2")
    resp = ops.describe(NS, name)
    assert resp is not None and resp.state == AppState.PENDING
    assert resp.msg.startswith("submission in progress: worker[1], worker[2] not created yet")
    assert replicas(resp) == {f"worker[{k}]": AppState.PENDING for k in range(3)}
    assert resp.roles[0].num_replicas == 3
    (listed,) = ops.list(NS)
    assert listed.state == AppState.PENDING


def test_missing_jobs_beyond_the_grace_fail_the_app_with_one_clear_message() -> None:
    api = Api()
    ops, name = submit(api, app(workers=3, ps=1), margin=0)
    drop(api, "-worker-1", "-ps-0")  # a whole role missing too
    resp = ops.describe(NS, name)
    assert resp is not None and resp.state == AppState.FAILED
    assert resp.msg == (
        "app half-created: worker[1], ps[0] have no Job (its submitter stopped before creating"
        " them); run it again"
    )
    assert replicas(resp) == {"worker[0]": AppState.PENDING, "worker[1]": AppState.FAILED,
                              "worker[2]": AppState.PENDING, "ps[0]": AppState.FAILED}  # fmt: skip
    assert [s.role for s in resp.roles_statuses] == ["worker", "ps"]
    assert [(r.name, r.num_replicas) for r in resp.roles] == [("worker", 3), ("ps", 1)]
    failed = resp.roles_statuses[1].replicas[0]
    assert json.loads(failed.structured_error_msg)["message"] == resp.msg
    (listed,) = ops.list(NS)
    assert listed.state == AppState.FAILED
    # the replicas that exist are stopped (Runner.wait / the Airflow retry call it)
    ops.enforce_fail_fast(NS, name)
    assert all(j.spec.parallelism == 0 for j in api.jobs.values())


def test_rank0_running_past_the_margin_means_the_submitter_is_gone() -> None:
    api = Api()
    ops, name = submit(api, app(workers=2), margin=60, rank0_address="pod_ip")
    drop(api, "-worker-1")
    rank0 = next(iter(api.jobs.values()))
    api.pods[:] = [pod(rank0, "Running", datetime.now(UTC) - timedelta(seconds=5))]
    resp = ops.describe(NS, name)  # within the pod-IP wait, rank 0 started 5 s ago
    assert resp is not None and resp.state == AppState.PENDING
    assert resp.msg.startswith("submission in progress: worker[1] not created yet")
    api.pods[:] = [pod(rank0, "Running", datetime.now(UTC) - timedelta(seconds=61))]
    resp = ops.describe(NS, name)
    assert resp is not None and resp.state == AppState.FAILED
    assert resp.msg.startswith("app half-created: worker[1] has no Job ")
    (listed,) = ops.list(NS)  # list reads rank 0's pod for such an app
    assert listed.state == AppState.FAILED
    ops.enforce_fail_fast(NS, name)  # stopped: the Job controller deletes rank 0's pod
    api.pods.clear()
    resp = ops.describe(NS, name)
    assert resp is not None and resp.state == AppState.FAILED
    assert resp.msg.startswith("app half-created: worker[1] has no Job ")


def test_an_app_without_the_annotations_reads_as_today() -> None:
    api = Api()
    ops, name = submit(api, app(workers=2), margin=0)
    for job in api.jobs.values():
        job.metadata.annotations = None  # submitted by an older version
    drop(api, "-worker-1")
    resp = ops.describe(NS, name)
    assert resp is not None and resp.state == AppState.PENDING
    assert resp.msg == NONE
    assert replicas(resp) == {"worker[0]": AppState.PENDING}


def test_edited_annotations_are_ignored() -> None:
    api = Api()
    submit(api, app(workers=2), margin=0)
    for job in api.jobs.values():
        job.metadata.annotations[ANNOTATION_SUBMITTED_AT] = "yesterday"
    drop(api, "-worker-1")
    assert check(list(api.jobs.values()), None, 1e12) is None


def test_partial_state_keeps_what_the_existing_replicas_say() -> None:
    pending = Partial(((0, "worker", 1),), failed=False)
    assert pending.state(AppState.RUNNING) == AppState.PENDING
    assert pending.state(AppState.CANCELLED) == AppState.CANCELLED
    assert pending.state(AppState.FAILED) == AppState.FAILED
    assert Partial(((0, "worker", 1),), failed=True).state(AppState.RUNNING) == AppState.FAILED


def test_scheduler_settings_for_the_margin() -> None:
    assert SubmitTiming.from_params({"k8s_submit_margin": "2.5"}).margin == 2.5
    assert SubmitTiming.from_params({}).margin == SUBMIT_MARGIN
    with pytest.raises(ValueError, match=r"^kubernetes scheduler parameter `k8s_submit_margin`"
                       r" \(env TORCHX_K8S_SUBMIT_MARGIN\) must be a number of seconds >= 0,"
                       r" got 'soon'$"):  # fmt: skip
        create_scheduler("test", k8s_submit_margin="soon")


def test_no_scheduler_setting_delays_the_jobs() -> None:
    """The test-only Job delay is no setting: ``k8s_test_job_delay`` (from a connection's
    ``scheduler_params`` or ``TORCHX_K8S_TEST_JOB_DELAY``) is an unknown key, ignored; tests
    inject the delay with ``tests/_hooks/k8s_job_delay``."""
    sched = create_scheduler("test", k8s_test_job_delay="600", k8s_submit_margin="5")
    timing = sched._plain_timing
    assert timing == SubmitTiming(margin=5.0)
    cfg = {"mode": "plain", "validate_spec": False, "namespace": NS, "rank0_address": "dns"}
    request = sched.submit_dryrun(app(workers=3), cfg).request
    slept: list[float] = []
    api = Api()
    ops = PlainOps(lambda: None, sleep=slept.append, timing=timing)
    ops.__dict__["_batch"] = ops.__dict__["_core"] = api
    ops.create(NS, request)
    assert len(api.jobs) == 3 and slept == []


class _DryRuns(Api):
    """Records the dry-run creates (``dry_run="All"``) instead of storing them."""

    def __init__(self) -> None:
        super().__init__()
        self.dry: list[str] = []

    def create_namespaced_service(self, ns: str, service: Any, **kw: Any) -> None:
        assert kw == {"dry_run": "All"}
        self.dry.append(service.metadata.name)

    def create_namespaced_job(self, ns: str, job: Any, **kw: Any) -> None:
        assert kw == {"dry_run": "All"}
        self.dry.append(job.metadata.name)


def test_validation_dry_runs_the_service_and_each_roles_longest_named_job() -> None:
    """One API call per role, not per replica: a role's Jobs differ in the replica id only."""
    from torchx.schedulers._kubernetes.plain_submit import PlainSubmitter

    cfg = {"mode": "plain", "validate_spec": False, "namespace": NS}
    request = create_scheduler("test").submit_dryrun(app(workers=12, ps=2), cfg).request
    api = _DryRuns()
    PlainSubmitter(api, api, lambda s: None, SubmitTiming()).validate(NS, request.resource)
    app_id = request.resource.app_id
    assert api.dry == [app_id, f"{app_id}-worker-11", f"{app_id}-ps-1"]
    assert api.jobs == {} and api.services == {}
