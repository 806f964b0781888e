"""OpenLineage of TorchXOperator tasks in the distributed Airflow stack (docker-compose.celery.yml).

The stack of test_dags_celery.py (``celery_stack``, tests/_celery_shared.py: CeleryExecutor,
Redis, Postgres, two Celery workers on distinct hosts; the apps are pods of the local cluster),
with the DAG of dags/torchx_celery_lineage.py. Each worker runs the OpenLineage provider of its
image with the client's file transport, writing to a file of its own on the stack's shared logs
volume; the test reads the file from a container. The test runs twice, once per mode of the
listener: in a thread (``[openlineage] execute_in_thread``, the README's setting: worker 1)
and forked (the provider's default, worker 2; under ``dag.test`` it loses the COMPLETE/FAIL
events, on a real Celery worker it does not), with the other worker stopped meanwhile, so the
tasks run where the mode is. The ``train`` pod writes its own ``OPENLINEAGE*`` variables to the
work directory every pod mounts. The test leaves no Job or pod and both workers up.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from _airflow_rest import Api
from _celery_faults import failure
from _celery_shared import LINEAGE_DAG as DAG
from _celery_shared import LISTENER_MODES, events_file
from _celery_shared import OPENLINEAGE_NAMESPACE as NAMESPACE
from _celery_stack import WORKERS, CeleryStack
from _support import wait_until

pytestmark = [
    pytest.mark.docker,
    pytest.mark.k8s,
    pytest.mark.slow,
    pytest.mark.timeout(1500),
]


@pytest.fixture(params=sorted(LISTENER_MODES))
def worker(request: pytest.FixtureRequest, celery_stack: CeleryStack) -> Iterator[str]:
    """The worker whose listener runs in the mode of the parameter, the only one up while the
    test runs (the other is stopped, then started again and healthy)."""
    mine = LISTENER_MODES[request.param]
    others = [w for w in WORKERS if w != mine]
    celery_stack.wait_healthy()  # an earlier test may have restarted a worker
    for other in others:
        celery_stack.stop(other)
    try:
        yield mine
    finally:
        for other in others:
            celery_stack.start(other)
        celery_stack.wait_healthy()
        celery_stack.cluster.empty()
        assert celery_stack.cluster.leftovers() == []


def _events(stack: CeleryStack, worker: str) -> list[dict[str, Any]]:
    """Every event the worker wrote so far (none before its first task)."""
    code, out = stack.exec(worker, ["cat", events_file(worker)])
    return [json.loads(line) for line in out.splitlines() if line.strip()] if code == 0 else []


def _task_events(
    stack: CeleryStack, worker: str, task: str, wanted: set[str]
) -> dict[str, dict[str, Any]]:
    """The last event of each type of the task's OpenLineage job, once ``wanted`` are there
    (the worker runs the DAG once: only in this test).

    The listener emits from a thread of the task process: the last event may come a little
    after the task's state. The bound only stops a hung test.
    """

    def found() -> dict[str, dict[str, Any]]:
        return {
            e["eventType"]: e for e in _events(stack, worker) if e["job"]["name"] == f"{DAG}.{task}"
        }

    wait_until(lambda: wanted <= set(found()), 120, f"{task}'s {sorted(wanted)} events", 2)
    return found()


def _datasets(event: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    return [(d["namespace"], d["name"]) for d in event.get(kind, [])]


def test_celery_workers_emit_torchx_lineage_and_the_replica_gets_the_parent(
    celery_stack: CeleryStack, worker: str
) -> None:
    stack = celery_stack
    assert stack.api is not None
    api: Api = stack.api
    out = stack.workdir / f"ol-env-{uuid.uuid4().hex[:8]}.json"
    run_id = api.trigger(DAG, {"out": str(out)})
    assert api.wait_run(DAG, run_id) == "failed", failure(api, stack, DAG, run_id)
    tasks = api.tasks(DAG, run_id)
    assert tasks["train"]["state"] == "success", failure(api, stack, DAG, run_id)
    assert tasks["bad"]["state"] == "failed", failure(api, stack, DAG, run_id)
    train = api.xcom(DAG, run_id, "train")

    assert {ti["hostname"] for ti in tasks.values()} == {worker}, tasks
    events = _task_events(stack, worker, "train", {"START", "COMPLETE"})
    assert {"START", "COMPLETE"} <= set(events), failure(api, stack, DAG, run_id)
    start, complete = events["START"], events["COMPLETE"]
    assert start["job"]["namespace"] == NAMESPACE
    assert _datasets(start, "inputs") == [("s3://datasets", "mnist/train")]
    assert _datasets(complete, "inputs") == [("s3://datasets", "mnist/train")]
    expected_out = ("s3://ckpt", f"{DAG}/{train['app_id']}/model.pt")
    assert _datasets(complete, "outputs") == [expected_out]
    facet = complete["run"]["facets"]["torchx"]
    assert facet["scheduler"] == "kubernetes" and facet["component"] == "utils.python"
    assert (facet["appHandle"], facet["appId"], facet["state"]) == (
        train["app_handle"],
        train["app_id"],
        "SUCCEEDED",
    )
    [role] = facet["roles"]
    assert role["replicas"] == 1 and role["image"] == celery_stack.pod_image
    assert "torchx_error" not in complete["run"]["facets"]
    assert start["run"]["runId"] == complete["run"]["runId"]

    # the pod saw the task's OpenLineage run (on the worker) as its parent
    replica = json.loads(out.read_text())
    run = complete["run"]["runId"]
    assert replica["OPENLINEAGE_PARENT_ID"] == f"{NAMESPACE}/{DAG}.train/{run}"
    assert replica["OPENLINEAGE_ROOT_PARENT_ID"].startswith(f"{NAMESPACE}/{DAG}/")

    bad = _task_events(stack, worker, "bad", {"START", "FAIL"})
    assert {"START", "FAIL"} <= set(bad), failure(api, stack, DAG, run_id)
    fail = bad["FAIL"]
    assert _datasets(fail, "outputs") == [("s3://ckpt", "bad")]
    error = fail["run"]["facets"]["torchx_error"]
    assert error["state"] == "FAILED" and error["appHandle"].startswith("kubernetes://")
    assert error["message"].startswith(f"TorchX app {error['appHandle']} ended FAILED")
    assert fail["run"]["facets"]["torchx"]["state"] == "FAILED"
    assert "errorMessage" in fail["run"]["facets"]
