"""Jobset mode, Kueue and the startup timeout on real kubernetes client models.

The API responses are real ``V1Job``/``V1Pod`` model objects and the JobSet/Workload dicts the
API server returns for those CRDs; the API classes are small fakes that return them (the live
tests in ``test_live_jobset_kueue.py`` run the same code against a real cluster).
"""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from typing import Any, Optional

import pytest

from torchx.schedulers._kubernetes import kueue
from torchx.schedulers._kubernetes.jobset_ops import JobSetOps
from torchx.schedulers._kubernetes.plain import ANNOTATION_STOPPED
from torchx.schedulers.kubernetes_scheduler import create_scheduler
from torchx.specs.api import NONE, AppDef, AppState, InvalidRunConfigException, RetryPolicy, Role

k8s = pytest.importorskip("kubernetes.client")

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def app(replicas: int = 2, roles: int = 1, **kw: Any) -> AppDef:
    return AppDef(
        "train",
        [
            Role(
                f"r{i}",
                "busybox:1.36",
                entrypoint="echo",
                args=["${replica_id}"],
                num_replicas=replicas,
                **kw,
            )
            for i in range(roles)
        ],
    )


def dryrun(a: AppDef, **cfg: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_scheduler("t").submit_dryrun(a, {"validate_spec": False, **cfg})


def jobset_of(a: AppDef, **cfg: Any) -> dict[str, Any]:
    from torchx.schedulers._kubernetes.render import to_plain

    resource: dict[str, Any] = to_plain(dryrun(a, mode="jobset", **cfg).request.resource)
    resource["metadata"]["uid"] = "js-uid"
    return resource


# -- build ------------------------------------------------------------------------------------


def test_jobset_one_indexed_job_per_role_and_rank0_dns() -> None:
    js = jobset_of(app(replicas=2, roles=2))
    name = js["metadata"]["name"]
    jobs = js["spec"]["replicatedJobs"]
    assert [j["name"] for j in jobs] == ["r0", "r1"]
    spec = jobs[0]["template"]["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 2, 2)
    container = spec["template"]["spec"]["containers"][0]
    assert container["command"] == ["echo", "$(TORCHX_REPLICA_ID)"]
    env = {e["name"]: e for e in container["env"]}
    assert container["env"][0]["name"] == "TORCHX_REPLICA_ID"  # first: later values expand it
    assert env["TORCHX_RANK0_HOST"]["value"] == f"{name}-r0-0-0.{name}"
    assert "suspend" not in js["spec"]


def test_jobset_retries_per_policy() -> None:
    js = jobset_of(app(max_retries=3, retry_policy=RetryPolicy.APPLICATION))
    assert js["spec"]["failurePolicy"] == {"maxRestarts": 3}
    assert js["spec"]["replicatedJobs"][0]["template"]["spec"]["backoffLimit"] == 0
    js = jobset_of(app(max_retries=2, retry_policy=RetryPolicy.REPLICA))
    spec = js["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert js["spec"]["failurePolicy"] == {"maxRestarts": 0}
    assert spec["backoffLimitPerIndex"] == 2 and "backoffLimit" not in spec
    rule = spec["podFailurePolicy"]["rules"][0]
    assert rule == {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
    with pytest.raises(ValueError, match="ROLE is not supported in jobset mode"):
        jobset_of(app(max_retries=1, retry_policy=RetryPolicy.ROLE))


def test_kueue_labels_and_suspend() -> None:
    js = jobset_of(app(), queue="team-a", priority_class="high")
    assert js["spec"]["suspend"] is True
    labels = js["metadata"]["labels"]
    assert labels[kueue.LABEL_KUEUE_QUEUE] == "team-a"
    assert labels[kueue.LABEL_KUEUE_PRIORITY] == "high"
    plain = dryrun(app(replicas=1), mode="plain", queue="team-a").request.resource
    assert plain.jobs[0].spec.suspend is True
    assert plain.jobs[0].metadata.labels[kueue.LABEL_KUEUE_QUEUE] == "team-a"
    with pytest.raises(ValueError, match="use -cfg mode=jobset"):
        dryrun(app(replicas=2), mode="plain", queue="team-a")


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ({"image_pull_policy": "Sometimes"}, "image_pull_policy"),
        ({"startup_timeout": -1.0}, ">= 0"),
    ],
)
def test_bad_options(cfg: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidRunConfigException, match=match):
        dryrun(app(), mode="jobset", **cfg)


def test_image_pull_policy_on_every_container() -> None:
    js = jobset_of(app(), image_pull_policy="Never")
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["imagePullPolicy"] == "Never"
    js = jobset_of(app())
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert "imagePullPolicy" not in pod["containers"][0]


# -- describe ---------------------------------------------------------------------------------


def child_job(js: dict[str, Any], started: Optional[datetime], **status: Any) -> Any:
    name = js["metadata"]["name"]
    labels = {"jobset.sigs.k8s.io/replicatedjob-name": "r0", "jobset.sigs.k8s.io/jobset-name": name}
    template = k8s.V1PodTemplateSpec(
        spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="r0", image="busybox:1.36")])
    )
    return k8s.V1Job(
        metadata=k8s.V1ObjectMeta(name=f"{name}-r0-0", uid="job-uid", labels=labels),
        spec=k8s.V1JobSpec(template=template, backoff_limit=0),
        status=k8s.V1JobStatus(start_time=started, **status),
    )


def pull_error_pod(job: Any, index: int) -> Any:
    waiting = k8s.V1ContainerStateWaiting(reason="ErrImagePull", message="pull access denied")
    status = k8s.V1ContainerStatus(
        name="r0",
        image="x",
        image_id="",
        ready=False,
        restart_count=0,
        state=k8s.V1ContainerState(waiting=waiting),
    )
    labels = {"job-name": job.metadata.name, "batch.kubernetes.io/job-completion-index": str(index)}
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=f"p{index}", labels=labels, creation_timestamp=T0),
        status=k8s.V1PodStatus(phase="Pending", container_statuses=[status]),
    )


class FakeApis:
    """The CustomObjectsApi/BatchV1Api/CoreV1Api calls JobSetOps makes, from fixed objects."""

    def __init__(self, js: dict[str, Any], jobs: list[Any], pods: list[Any], wls: list[Any]):
        self.js, self.jobs, self.pods, self.wls = js, jobs, pods, wls
        self.patches: list[tuple[str, Any]] = []

    def get_namespaced_custom_object(self, *args: Any) -> dict[str, Any]:
        return self.js

    def list_namespaced_custom_object(self, *args: Any, **kw: Any) -> dict[str, Any]:
        return {"items": self.wls if args[-1] == "workloads" else [self.js]}

    def patch_namespaced_custom_object(self, *args: Any) -> None:
        self.patches.append((args[-2], args[-1]))

    def list_namespaced_job(self, *args: Any, **kw: Any) -> Any:
        return k8s.V1JobList(items=self.jobs)

    def list_namespaced_pod(self, *args: Any, **kw: Any) -> Any:
        return k8s.V1PodList(items=self.pods, metadata=k8s.V1ListMeta(resource_version="1"))

    def list_namespaced_event(self, *args: Any, **kw: Any) -> Any:
        return k8s.CoreV1EventList(items=[])


def ops(fake: FakeApis) -> JobSetOps:
    o = JobSetOps(lambda: None)
    o.__dict__.update(_custom=fake, _batch=fake, _core=fake)
    return o


def workload(conditions: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "metadata": {"name": "wl", "ownerReferences": [{"uid": "js-uid"}]},
        "spec": {"queueName": "team-a"},
        "status": {"conditions": conditions},
    }


def test_describe_pending_with_kueue_message_then_running() -> None:
    js = jobset_of(app(), queue="team-a")
    wl = workload(
        [
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": "Pending",
                "message": "couldn't assign flavors to pod set r0: insufficient quota for cpu",
            }
        ]
    )
    desc = ops(FakeApis(js, [], [], [wl])).describe("default", js["metadata"]["name"])
    assert desc is not None and desc.state == AppState.PENDING
    assert desc.msg.startswith("waiting for Kueue admission in queue team-a: couldn't assign")
    # admitted: Kueue clears suspend, the pods run
    js["spec"]["suspend"] = False
    job = child_job(js, T0, active=2)
    pods = [pull_error_pod(job, 0), pull_error_pod(job, 1)]
    for p in pods:
        p.status.phase, p.status.container_statuses = "Running", None
    wl = workload(
        [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]
    )
    desc = ops(FakeApis(js, [job], pods, [wl])).describe("default", js["metadata"]["name"])
    assert desc is not None and desc.state == AppState.RUNNING and desc.msg == NONE
    assert [r.id for r in desc.roles_statuses[0].replicas] == [0, 1]


def test_describe_shows_preemption() -> None:
    js = jobset_of(app(), queue="team-a")
    wl = workload(
        [
            {"type": "QuotaReserved", "status": "False", "message": "waiting for quota"},
            {
                "type": "Evicted",
                "status": "True",
                "reason": "Preempted",
                "message": "Preempted to accommodate a workload (UID: x)",
            },
            {
                "type": "Preempted",
                "status": "True",
                "reason": "InClusterQueue",
                "message": "Preempted to accommodate a workload (UID: x)",
            },
        ]
    )
    desc = ops(FakeApis(js, [], [], [wl])).describe("default", js["metadata"]["name"])
    assert desc is not None and desc.state == AppState.PENDING
    assert "preempted by Kueue (InClusterQueue): Preempted to accommodate" in desc.msg
    assert "evicted by Kueue (Preempted)" in desc.msg


def test_unpullable_image_fails_after_startup_timeout_and_is_stopped() -> None:
    js = jobset_of(app(), startup_timeout=60.0)
    js["metadata"]["annotations"] = {"torchx.pytorch.org/startup-timeout": "60"}
    now = datetime.now(UTC)
    job = child_job(js, now)  # started just now: still waiting
    fake = FakeApis(js, [job], [pull_error_pod(job, 0), pull_error_pod(job, 1)], [])
    desc = ops(fake).describe("default", js["metadata"]["name"])
    assert desc is not None and desc.state == AppState.PENDING
    assert "ErrImagePull: pull access denied" in desc.msg
    fake.jobs = [child_job(js, T0)]  # started long ago
    fake.pods = [pull_error_pod(fake.jobs[0], 0), pull_error_pod(fake.jobs[0], 1)]
    o = ops(fake)
    desc = o.describe("default", js["metadata"]["name"])
    assert desc is not None and desc.state == AppState.FAILED
    assert desc.msg.startswith("not started within startup_timeout=60s: r0[0]")
    o.enforce_fail_fast("default", js["metadata"]["name"])
    ((_, body),) = fake.patches
    assert body["spec"] == {"suspend": True}
    assert body["metadata"]["annotations"][ANNOTATION_STOPPED] == "startup-timeout"


def test_completed_and_failed_jobsets() -> None:
    js = jobset_of(app())
    js["status"] = {"conditions": [{"type": "Completed", "status": "True"}]}
    job = child_job(js, T0, completed_indexes="0-1", succeeded=2)
    desc = ops(FakeApis(js, [job], [], [])).describe("default", js["metadata"]["name"])
    assert desc is not None and desc.state == AppState.SUCCEEDED
    assert all(r.state == AppState.SUCCEEDED for r in desc.roles_statuses[0].replicas)
    js["status"] = {
        "conditions": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "FailedJobs",
                "message": "jobset failed due to reaching max number of restarts",
            }
        ]
    }
    job = child_job(js, T0, failed_indexes="1", completed_indexes="0")
    desc = ops(FakeApis(js, [job], [], [])).describe("default", js["metadata"]["name"])
    assert desc is not None and desc.state == AppState.FAILED
    assert [r.state for r in desc.roles_statuses[0].replicas] == [
        AppState.SUCCEEDED,
        AppState.FAILED,
    ]
    assert "max number of restarts" in desc.msg


def test_cancel_suspends_and_deactivates_the_workload() -> None:
    js = jobset_of(app(), queue="team-a")
    fake = FakeApis(js, [], [], [workload([{"type": "QuotaReserved", "status": "True"}])])
    ops(fake).abort("default", js["metadata"]["name"])
    assert fake.patches[0][1]["metadata"]["annotations"][ANNOTATION_STOPPED] == "cancelled"
    assert fake.patches[1] == ("wl", {"spec": {"active": False}})
    js["metadata"]["annotations"] = {ANNOTATION_STOPPED: "cancelled"}
    desc = ops(fake).describe("default", js["metadata"]["name"])
    assert desc is not None and desc.state == AppState.CANCELLED


def test_list_and_log_container() -> None:
    js = jobset_of(app())
    js["status"] = {"replicatedJobsStatus": [{"name": "r0", "ready": 1, "active": 1}]}
    fake = FakeApis(js, [], [], [])
    (entry,) = ops(fake).list("default")
    assert (entry.app_id, entry.state) == (f"default:{js['metadata']['name']}", AppState.RUNNING)
    js["spec"]["suspend"] = True  # held by Kueue
    assert ops(fake).list("default")[0].state == AppState.PENDING
    assert ops(fake).log_container("r0", 1) == "r0"


@pytest.mark.parametrize("status", [403, 404])
def test_no_jobset_crd_or_no_permission_means_no_jobset_app(status: int) -> None:
    from kubernetes.client.rest import ApiException

    class Refusing:
        def get_namespaced_custom_object(self, *args: Any, **kw: Any) -> Any:
            raise ApiException(status=status)

        list_namespaced_custom_object = get_namespaced_custom_object

    o = JobSetOps(lambda: None)
    o.__dict__.update(_custom=Refusing())
    assert o.describe("default", "x") is None and o.list("default") == []
    assert kueue.workload_lister(Refusing())("default") == []


def test_queued_app_without_workload_says_so() -> None:
    js = jobset_of(app(), queue="team-a")
    desc = ops(FakeApis(js, [], [], [])).describe("default", js["metadata"]["name"])
    assert desc is not None and desc.state == AppState.PENDING
    assert desc.msg.startswith("suspended for Kueue queue team-a: no Kueue Workload yet")
