"""Volcano mode against the real API server of the local cluster (``k8s``).

No Volcano controller runs here (Volcano's Go module is not served by the module proxy, so it
cannot be built), so these tests use the Volcano Job CRD kept in the repo (k8s-current.sh
installs it; the tests install it if the cluster lacks it), submit real Jobs (server-side dry run
included), and drive ``.status`` themselves as the controller would; describe, list, cancel and
delete are then checked against what the API server stores. Every Job a test creates is deleted,
and the CRD too if the test installed it.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from torchx.schedulers.kubernetes_scheduler import KubernetesScheduler, create_scheduler
from torchx.specs.api import AppDef, AppState, ReplicaState, Resource, Role

pytestmark = pytest.mark.k8s

CRD_FILE = (
    Path(__file__).resolve().parents[4] / "core/torchx/schedulers/_kubernetes/crds/volcano-job.yaml"
)
CRD_NAME = "jobs.batch.volcano.sh"
GVP = {"group": "batch.volcano.sh", "version": "v1alpha1", "plural": "jobs"}


@pytest.fixture(scope="module")
def api() -> Iterator[Any]:
    from kubernetes import config

    client = config.new_client_from_config(config_file=os.environ["KUBECONFIG"])
    yield client
    client.close()


def _crd_established(ext: Any) -> bool:
    crd = ext.read_custom_resource_definition(CRD_NAME)
    return any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or [])


@pytest.fixture(scope="module")
def volcano_crd(api: Any) -> Iterator[None]:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    ext = client.ApiextensionsV1Api(api)
    created = False
    try:
        ext.read_custom_resource_definition(CRD_NAME)
    except ApiException as e:
        if e.status != 404:
            raise
        ext.create_custom_resource_definition(yaml.safe_load(CRD_FILE.read_text()))
        created = True
    deadline = time.monotonic() + 30
    while not _crd_established(ext):
        assert time.monotonic() < deadline, "the Volcano Job CRD never became Established"
        time.sleep(0.2)
    yield
    if created:
        ext.delete_custom_resource_definition(CRD_NAME)


@pytest.fixture
def scheduler(api: Any, volcano_crd: None) -> Iterator[KubernetesScheduler]:
    sched = create_scheduler("live", client=api)
    created: list[str] = []
    real_schedule = sched.schedule

    def tracking_schedule(info: Any) -> str:
        app_id = real_schedule(info)
        created.append(app_id)
        return app_id

    sched.schedule = tracking_schedule  # type: ignore[method-assign]
    yield sched
    for app_id in created:
        sched.delete(app_id)


def _app(name: str = "vc") -> AppDef:
    res = Resource(cpu=1, gpu=0, memMB=512)
    return AppDef(
        f"{name}-{uuid.uuid4().hex[:6]}",
        [
            Role(
                "trainer",
                "torchx-flow/busybox:latest",
                entrypoint="true",
                num_replicas=2,
                resource=res,
            ),
            Role("ps", "torchx-flow/busybox:latest", entrypoint="true", resource=res),
        ],
    )


def _set_status(api: Any, app_id: str, phase: str, tasks: dict[str, str]) -> None:
    """Do what the Volcano controller would: write the Job's status subresource."""
    from kubernetes import client

    namespace, name = app_id.split(":")
    custom = client.CustomObjectsApi(api)
    job = custom.get_namespaced_custom_object(namespace=namespace, name=name, **GVP)
    job["status"] = {
        "state": {"phase": phase},
        "taskStatusCount": {task: {"phase": {p: 1}} for task, p in tasks.items()},
    }
    custom.replace_namespaced_custom_object_status(namespace=namespace, name=name, body=job, **GVP)


CFG = {"queue": "default", "namespace": "default"}


def test_submit_validates_and_creates_a_volcano_job(
    api: Any, scheduler: KubernetesScheduler
) -> None:
    from kubernetes import client

    app = _app()
    app_id = scheduler.submit(app, CFG)  # validate_spec=True: server-side dry run first
    namespace, name = app_id.split(":")
    assert namespace == "default" and name.startswith(app.name)
    job = client.CustomObjectsApi(api).get_namespaced_custom_object(
        namespace="default", name=name, **GVP
    )
    assert [t["name"] for t in job["spec"]["tasks"]] == ["trainer-0", "trainer-1", "ps-0"]
    template = job["spec"]["tasks"][2]["template"]
    assert template["metadata"]["labels"]["torchx.pytorch.org/role-name"] == "ps"
    assert template["spec"]["containers"][0]["resources"]["limits"] == {
        "cpu": "1000m",
        "memory": "512M",
    }
    desc = scheduler.describe(app_id)
    assert desc is not None and desc.state == AppState.UNKNOWN  # no controller wrote a status yet


def test_describe_follows_the_status_the_controller_writes(
    api: Any, scheduler: KubernetesScheduler
) -> None:
    app_id = scheduler.submit(_app(), CFG)
    _set_status(
        api, app_id, "Running", {"trainer-0": "Running", "trainer-1": "Pending", "ps-0": "Running"}
    )
    desc = scheduler.describe(app_id)
    assert desc is not None and desc.state == AppState.RUNNING
    states = {(r.role, r.id): r.state for rs in desc.roles_statuses for r in rs.replicas}
    assert states == {
        ("trainer", 0): ReplicaState.RUNNING,
        ("trainer", 1): ReplicaState.PENDING,
        ("ps", 0): ReplicaState.RUNNING,
    }
    _set_status(
        api,
        app_id,
        "Completed",
        {"trainer-0": "Succeeded", "trainer-1": "Succeeded", "ps-0": "Succeeded"},
    )
    done = scheduler.describe(app_id)
    assert done is not None and done.state == AppState.SUCCEEDED
    listed = {a.app_id: a.state for a in scheduler.list({"namespace": "default"})}
    assert listed[app_id] == AppState.SUCCEEDED


def test_cancel_aborts_keeping_the_spec_and_delete_removes(
    api: Any, scheduler: KubernetesScheduler
) -> None:
    from kubernetes import client

    app_id = scheduler.submit(_app(), CFG)
    _set_status(api, app_id, "Running", {"trainer-0": "Running"})
    scheduler.cancel(app_id)
    desc = scheduler.describe(app_id)
    assert desc is not None and desc.state == AppState.CANCELLED
    name = app_id.split(":")[1]
    job = client.CustomObjectsApi(api).get_namespaced_custom_object(
        namespace="default", name=name, **GVP
    )
    assert len(job["spec"]["tasks"]) == 3
    scheduler.delete(app_id)
    assert scheduler.describe(app_id) is None and not scheduler.exists(app_id)
    scheduler.cancel(app_id)  # idempotent on a missing app


def test_bad_namespace_and_duplicate_name_are_clear_errors(scheduler: KubernetesScheduler) -> None:
    with pytest.raises(ValueError, match="namespace `no-such-ns-x` does not exist"):
        scheduler.submit_dryrun(_app(), {**CFG, "namespace": "no-such-ns-x"})
    info = scheduler.submit_dryrun(_app(), CFG)
    scheduler.schedule(info)
    with pytest.raises(ValueError, match=r"Job `.*` already exists"):
        scheduler.schedule(info)


def test_replica_hostname_comes_from_the_pod_volcano_would_create(
    api: Any, scheduler: KubernetesScheduler
) -> None:
    """Create the pod of task ps-0 from the Job's own template, as the Volcano controller does."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    app_id = scheduler.submit(_app(), CFG)
    name = app_id.split(":")[1]
    job = client.CustomObjectsApi(api).get_namespaced_custom_object(
        namespace="default", name=name, **GVP
    )
    template = job["spec"]["tasks"][2]["template"]
    pod_name = f"{name}-ps-0-0"  # Volcano names pods {job}-{task}-{index}
    core.create_namespaced_pod(
        "default", {**template, "metadata": {**template["metadata"], "name": pod_name}}
    )
    try:
        deadline = time.monotonic() + 90
        while not (ip := core.read_namespaced_pod(pod_name, "default").status.pod_ip):
            assert time.monotonic() < deadline, "the pod never got an IP"
            time.sleep(0.5)
        _set_status(
            api,
            app_id,
            "Running",
            {"trainer-0": "Pending", "trainer-1": "Pending", "ps-0": "Running"},
        )
        desc = scheduler.describe(app_id)
        assert desc is not None
        hosts = {(r.role, r.id): r.hostname for rs in desc.roles_statuses for r in rs.replicas}
        assert hosts[("ps", 0)] == f"{ip.replace('.', '-')}.default.pod.cluster.local"
        assert hosts[("trainer", 0)] == ""  # no pod
    finally:
        core.delete_namespaced_pod(pod_name, "default", grace_period_seconds=0)


def test_volcano_jobs_carry_app_labels_found_by_selector_and_labelled_after_launch(
    api: Any, scheduler: KubernetesScheduler
) -> None:
    """The Volcano Job itself carries the labels: found before (here: without) any pod."""
    from kubernetes import client

    from torchx.schedulers.labels import LABEL_PREFIX, labels_metadata

    tag, cfg = uuid.uuid4().hex[:8], {"namespace": "default"}
    apps = {}
    for task in ("train", "eval"):
        app = _app(task)
        app.metadata.update(labels_metadata({"test-run": tag, "task": task}))
        apps[task] = scheduler.submit(app, CFG)
    train = apps["train"]
    job = client.CustomObjectsApi(api).get_namespaced_custom_object(
        namespace="default", name=train.split(":")[1], **GVP
    )
    assert job["metadata"]["labels"][LABEL_PREFIX + "task"] == "train"
    both = scheduler.list_by_labels(labels_metadata({"test-run": tag}), cfg)
    assert {f.app_id for f in both} == set(apps.values())
    (one,) = scheduler.list_by_labels(labels_metadata({"test-run": tag, "task": "train"}), cfg)
    assert one.app_id == train and one.labels[LABEL_PREFIX + "task"] == "train"

    _set_status(api, train, "Completed", {"trainer-0": "Succeeded", "ps-0": "Succeeded"})
    scheduler.set_app_labels(train, labels_metadata({"processed": "true"}))
    desc = scheduler.describe(train)
    assert desc is not None and desc.state == AppState.SUCCEEDED  # the status is untouched
    assert desc.metadata[LABEL_PREFIX + "processed"] == "true"
    wanted = labels_metadata({"processed": "true", "test-run": tag})
    (done,) = scheduler.list_by_labels(wanted, cfg)
    assert done.app_id == train and done.state == AppState.SUCCEEDED
    scheduler.delete(train)
    assert scheduler.list_by_labels(wanted, cfg) == []
    with pytest.raises(ValueError, match=f"kubernetes app `{train}` does not exist"):
        scheduler.set_app_labels(train, wanted)
