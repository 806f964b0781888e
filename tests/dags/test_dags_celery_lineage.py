"""OpenLineage of TorchXOperator tasks in the distributed Airflow stack (docker-compose.celery.yml).

One stack per listener mode (below), as in test_dags_celery.py (CeleryExecutor, Redis, Postgres,
two Celery workers on distinct hosts; the apps are pods of the local cluster), with the DAG of
dags/torchx_celery_lineage.py. Each worker runs the OpenLineage provider of its
image with the client's file transport, writing to a file of its own on the stack's shared logs
volume; the test reads both files from a container. The module runs twice, once per mode of the
listener: in a thread (``[openlineage] execute_in_thread``, the README's setting) and forked
(the provider's default; under ``dag.test`` it loses the COMPLETE/FAIL events, on a real Celery
worker it does not). The ``train`` pod writes its own ``OPENLINEAGE*`` variables to the work
directory every pod mounts. The module leaves no container, network, volume, namespace, Job or
pod.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from _airflow_rest import Api
from _celery_faults import failure
from _celery_stack import WORKERS, CeleryStack, build_images
from _infra import REPO, missing

pytestmark = [pytest.mark.docker, pytest.mark.k8s, pytest.mark.slow, pytest.mark.timeout(1500)]

DAG = "torchx_lineage"
NAMESPACE = "torchx-celery"
LINEAGE_DAG = REPO / "dags" / "torchx_celery_lineage.py"


def _events_file(worker: str) -> str:
    return f"/opt/airflow/logs/openlineage-{worker}.jsonl"


def _service_env(in_thread: bool) -> dict[str, dict[str, str]]:
    """Each worker: the file transport to a file of its own, the listener's mode."""
    env = {}
    for worker in WORKERS:
        transport = {"type": "file", "log_file_path": _events_file(worker), "append": True}
        env[worker] = {
            "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport),
            "AIRFLOW__OPENLINEAGE__NAMESPACE": NAMESPACE,
            "AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD": str(in_thread),
        }
    return env


@pytest.fixture(scope="module", params=["thread", "fork"])
def stack(request: pytest.FixtureRequest) -> Iterator[CeleryStack]:
    """The Celery stack with OpenLineage on the workers (the listener in a thread, or forked),
    up and healthy; removed afterwards."""
    if shutil.which("docker-compose") is None:
        missing("docker-compose", "docker-compose is not installed (scripts/install-ci-deps.sh)")
    build_images()
    stack = CeleryStack(prefix="txflow-lineage")
    stack.extra_dags = [LINEAGE_DAG]
    stack.service_env = _service_env(request.param == "thread")
    try:
        stack.up((DAG,))
        yield stack
    finally:
        left = stack.down()
    assert left == [], f"left behind: {left}"


def _events(stack: CeleryStack) -> list[dict[str, Any]]:
    """Every event both workers wrote so far (a worker that ran no task has no file)."""
    found = []
    for worker in WORKERS:
        code, out = stack.exec(worker, ["cat", _events_file(worker)])
        if code == 0:
            found += [json.loads(line) for line in out.splitlines() if line.strip()]
    return found


def _task_events(stack: CeleryStack, task: str, wanted: set[str]) -> dict[str, dict[str, Any]]:
    """The last event of each type of the task's OpenLineage job, once ``wanted`` are there.

    The listener emits from a thread of the task process: the last event may come a little
    after the task's state. The bound only stops a hung test.
    """
    deadline = time.monotonic() + 120
    while True:
        found = {e["eventType"]: e for e in _events(stack) if e["job"]["name"] == f"{DAG}.{task}"}
        if wanted <= set(found) or time.monotonic() > deadline:
            return found
        time.sleep(2)


def _datasets(event: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    return [(d["namespace"], d["name"]) for d in event.get(kind, [])]


def test_celery_workers_emit_torchx_lineage_and_the_replica_gets_the_parent(
    stack: CeleryStack,
) -> None:
    assert stack.api is not None
    api: Api = stack.api
    out = stack.workdir / f"ol-env-{uuid.uuid4().hex[:8]}.json"
    run_id = api.trigger(DAG, {"out": str(out)})
    assert api.wait_run(DAG, run_id) == "failed", failure(api, stack, DAG, run_id)
    tasks = api.tasks(DAG, run_id)
    assert tasks["train"]["state"] == "success", failure(api, stack, DAG, run_id)
    assert tasks["bad"]["state"] == "failed", failure(api, stack, DAG, run_id)
    train = api.xcom(DAG, run_id, "train")

    events = _task_events(stack, "train", {"START", "COMPLETE"})
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
    assert role["replicas"] == 1 and role["image"] == "torchx-flow/torch:2.13.0"
    assert "torchx_error" not in complete["run"]["facets"]
    assert start["run"]["runId"] == complete["run"]["runId"]

    # the pod saw the task's OpenLineage run (on the worker) as its parent
    replica = json.loads(out.read_text())
    run = complete["run"]["runId"]
    assert replica["OPENLINEAGE_PARENT_ID"] == f"{NAMESPACE}/{DAG}.train/{run}"
    assert replica["OPENLINEAGE_ROOT_PARENT_ID"].startswith(f"{NAMESPACE}/{DAG}/")

    bad = _task_events(stack, "bad", {"START", "FAIL"})
    assert {"START", "FAIL"} <= set(bad), failure(api, stack, DAG, run_id)
    fail = bad["FAIL"]
    assert _datasets(fail, "outputs") == [("s3://ckpt", "bad")]
    error = fail["run"]["facets"]["torchx_error"]
    assert error["state"] == "FAILED" and error["appHandle"].startswith("kubernetes://")
    assert error["message"].startswith(f"TorchX app {error['appHandle']} ended FAILED")
    assert fail["run"]["facets"]["torchx"]["state"] == "FAILED"
    assert "errorMessage" in fail["run"]["facets"]
