"""Volcano mode against the real API server of the local cluster, with the Volcano Job CRD
installed by ``scripts/infra/k8s-cluster.sh`` but no Volcano controller (its image cannot be
pulled here): the test creates the Job through the scheduler (server-side validated), then plays
the controller's part by writing the Job's ``.status`` itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _k8s_live import IMAGE, api_client, namespace

from torchx.specs.api import AppDef, AppState, Resource, Role

pytestmark = [pytest.mark.k8s]

CRD = {"group": "batch.volcano.sh", "version": "v1alpha1", "plural": "jobs"}


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    api = api_client()
    yield api
    api.close()


@pytest.fixture(scope="module")
def ns(client: Any) -> Iterator[str]:
    with namespace(client, "tx-vc") as name:
        yield name


def set_status(client: Any, ns: str, name: str, status: dict[str, Any]) -> None:
    from kubernetes import client as k8s

    custom = k8s.CustomObjectsApi(client)
    job = custom.get_namespaced_custom_object(namespace=ns, name=name, **CRD)
    job["status"] = status
    custom.replace_namespaced_custom_object_status(namespace=ns, name=name, body=job, **CRD)


def app() -> AppDef:
    role = Role(
        name="trainer",
        image=IMAGE,
        entrypoint="sh",
        args=["-c", "echo hi"],
        num_replicas=2,
        resource=Resource(cpu=1, gpu=0, memMB=512),
    )
    return AppDef(name="vc", roles=[role])


def test_volcano_job_lifecycle_on_the_api_server(client: Any, ns: str) -> None:
    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    sched = create_scheduler("test", client=client)
    app_id = sched.submit(app(), {"queue": "default", "namespace": ns})
    name = app_id.split(":", 1)[1]
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.UNKNOWN  # no controller wrote a status

    set_status(
        client,
        ns,
        name,
        {
            "state": {"phase": "Running"},
            "taskStatusCount": {
                "trainer-0": {"phase": {"Running": 1}},
                "trainer-1": {"phase": {"Pending": 1}},
            },
        },
    )
    desc = sched.describe(app_id)
    assert desc.state == AppState.RUNNING
    replicas = {r.id: r.state for r in desc.roles_statuses[0].replicas}
    assert replicas == {0: AppState.RUNNING, 1: AppState.PENDING}
    assert {a.app_id: a.state for a in sched.list({"namespace": ns})}[app_id] == AppState.RUNNING

    sched.cancel(app_id)  # writes phase Aborted, keeps the Job
    assert sched.describe(app_id).state == AppState.CANCELLED

    set_status(client, ns, name, {"state": {"phase": "Completed"}})
    assert sched.describe(app_id).state == AppState.SUCCEEDED

    sched.delete(app_id)
    assert sched.describe(app_id) is None
