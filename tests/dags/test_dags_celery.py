"""The distributed Airflow stack (docker-compose.celery.yml) with faults injected.

One stack per module (``stack`` fixture, about 2 minutes to start): CeleryExecutor with two
Celery workers on distinct hosts, triggerer, scheduler, dag-processor, api-server, Postgres and
Redis, on the local Docker engine; the apps run as pods of the local Kubernetes cluster (plain
mode, a namespace of this module, kubeconfig given inline in the ``torchx`` connection). DAGs:
the example DAG and compose/celery/dags/torchx_celery.py (variants of it with ``train`` as a
2-replica DDP app). Each test starts with an empty namespace and leaves none of its Jobs or
pods; the module's teardown leaves no container, network, volume or namespace.

The faults: a worker killed (SIGKILL) while ``train`` runs, and in the first second after the
launch; the triggerer killed while it follows a deferred app; an ``execution_timeout`` shorter
than the app; clearing a succeeded ``train``. The replicas' environment is checked for the
stack's secrets.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest
from _airflow_rest import Api
from _celery_stack import SECRETS, WORKERS, CeleryStack, Cluster, build_images
from _infra import missing

pytestmark = [pytest.mark.docker, pytest.mark.k8s, pytest.mark.slow, pytest.mark.timeout(1500)]

DAGS = ("torchx_training_ddp", "torchx_train", "torchx_train_deferred", "torchx_timeout")
K8S = {"scheduler": "kubernetes"}


@pytest.fixture(scope="module")
def stack() -> Iterator[CeleryStack]:
    """The Celery stack, up and healthy, with the DAGs parsed; removed afterwards."""
    if shutil.which("docker-compose") is None:
        missing("docker-compose", "docker-compose is not installed (scripts/install-ci-deps.sh)")
    build_images()
    # a dead worker's task (or triggerer's trigger) moves on after 20 s without a heartbeat
    stack = CeleryStack(settings={"HEARTBEAT_TIMEOUT": "20"})
    try:
        stack.up(DAGS)
        yield stack
    finally:
        left = stack.down()
    assert left == [], f"left behind: {left}"


@pytest.fixture
def api(stack: CeleryStack) -> Iterator[Api]:
    """The stack's API; the namespace is emptied after each test (its Jobs and pods)."""
    assert stack.api is not None
    yield stack.api
    stack.cluster.empty()
    assert stack.cluster.leftovers() == []


def _conf(stack: CeleryStack, steps: int) -> dict[str, Any]:
    return {**K8S, "workdir": str(stack.workdir / f"w{time.monotonic_ns()}"), "steps": steps}


def _failure(api: Api, stack: CeleryStack, dag_id: str, run_id: str) -> str:
    """What to print when a run did not go as expected: task states and logs, worker logs."""
    parts = []
    for task_id, ti in api.tasks(dag_id, run_id).items():
        parts.append(f"--- {task_id}: {ti['state']} try {ti['try_number']} on {ti['hostname']}")
        for n in range(1, int(ti["try_number"] or 0) + 1):
            parts.append(f"[try {n}]\n" + api.log(dag_id, run_id, task_id, n)[-3000:])
    for service in ("airflow-scheduler", *WORKERS, "airflow-triggerer"):
        parts.append(f"--- {service}\n" + stack.logs(service, 25))
    return "\n".join(parts)


def _assert_no_secrets(env: dict[str, str], where: str) -> None:
    airflow = sorted(k for k in env if k.startswith("AIRFLOW"))
    assert airflow == [], f"{where}: Airflow variables in a replica's env: {airflow}"
    leaked = [s for s in SECRETS if any(s in v for v in env.values())]
    assert leaked == [], f"{where}: the stack's secrets in a replica's env: {leaked}"
    assert not any("BEGIN CERTIFICATE" in v or "certificate-authority" in v for v in env.values())


def _job_name(app_id: str) -> str:
    """The app's name (its Jobs' instance label) in a kubernetes app id ``namespace:name``."""
    return app_id.partition(":")[2]


def _other(worker: str) -> str:
    return next(w for w in WORKERS if w != worker)


def test_training_dag_runs_train_as_2_replica_ddp_on_kubernetes(
    stack: CeleryStack, api: Api
) -> None:
    dag = "torchx_training_ddp"
    run_id = api.trigger(dag, _conf(stack, 100))
    state = api.wait_run(dag, run_id)
    assert state == "success", _failure(api, stack, dag, run_id)
    tasks = api.tasks(dag, run_id)
    assert {t: ti["state"] for t, ti in tasks.items()} == dict.fromkeys(
        ("prepare_data", "train", "evaluate"), "success"
    )
    assert {ti["hostname"] for ti in tasks.values()} <= set(WORKERS)
    train = api.xcom(dag, run_id, "train")
    assert train["state"] == "SUCCEEDED"
    assert train["app_handle"].startswith(f"kubernetes://torchx/{stack.cluster.namespace}:")
    # one app of two replicas: one Job and one pod per replica
    assert stack.cluster.apps(dag, "train") == {_job_name(train["app_id"])}
    assert len(stack.cluster.jobs(dag, "train")) == 2
    log = api.log(dag, run_id, "train", 1)
    assert "training on 2 workers, 100 steps" in log, log[-3000:]
    assert "evaluated" in api.log(dag, run_id, "evaluate", 1)
    # what every replica of the run was given: no Airflow variable, no secret
    for pod in stack.cluster.pods(dag):
        for c in pod.spec.containers:
            env = {e.name: e.value or "" for e in c.env or []}
            _assert_no_secrets(env, pod.metadata.name)
            assert not c.env_from, c.env_from


def test_clearing_succeeded_train_runs_a_new_app(stack: CeleryStack, api: Api) -> None:
    dag = "torchx_train"
    run_id = api.trigger(dag, _conf(stack, 20))
    assert api.wait_run(dag, run_id) == "success", _failure(api, stack, dag, run_id)
    first = _job_name(api.xcom(dag, run_id, "train")["app_id"])
    api.clear(dag, run_id, "train")
    api.wait_task(dag, run_id, "train", lambda ti: ti["state"] not in ("success",), timeout=60)
    assert api.wait_run(dag, run_id) == "success", _failure(api, stack, dag, run_id)
    second = _job_name(api.xcom(dag, run_id, "train")["app_id"])
    assert second != first
    assert stack.cluster.apps(dag, "train") == {first, second}


def _running_train(api: Api, stack: CeleryStack, dag: str, run_id: str) -> tuple[dict, list]:
    """Waits until ``train`` runs on a worker and its 2 replicas run; returns (ti, pods)."""
    api.wait_task(dag, run_id, "train", lambda t: t["state"] in ("running", "deferred"))
    deadline = time.monotonic() + 300
    while not (pods := stack.cluster.running(dag, "train", 2)):
        assert time.monotonic() < deadline, _failure(api, stack, dag, run_id)
        time.sleep(0.5)
    return api.tasks(dag, run_id)["train"], pods


def test_worker_killed_while_train_runs_retry_reattaches_on_other_worker(
    stack: CeleryStack, api: Api
) -> None:
    dag = "torchx_train"
    stack.wait_healthy()  # both workers (an earlier test may have restarted one)
    run_id = api.trigger(dag, _conf(stack, 5000))
    ti, pods = _running_train(api, stack, dag, run_id)
    worker = ti["hostname"]
    assert worker in WORKERS
    # the real environment of a running replica's main process
    for pod in pods:
        _assert_no_secrets(stack.cluster.environ(pod), pod.metadata.name)
    [app] = stack.cluster.apps(dag, "train")
    stack.kill(worker)
    try:
        state = api.wait_run(dag, run_id)
        assert state == "success", _failure(api, stack, dag, run_id)
        ti = api.tasks(dag, run_id)["train"]
        assert ti["try_number"] == 2 and ti["hostname"] == _other(worker), ti
        # the retry followed the app the killed try launched: no second set of Jobs
        assert stack.cluster.apps(dag, "train") == {app}
        assert _job_name(api.xcom(dag, run_id, "train")["app_id"]) == app
    finally:
        stack.start(worker)  # healthy again by the next test that needs it


def test_worker_killed_in_first_second_retry_finds_app_by_labels(
    stack: CeleryStack, api: Api
) -> None:
    dag = "torchx_train"
    stack.wait_healthy()
    run_id = api.trigger(dag, _conf(stack, 2000))
    ti = api.wait_task(dag, run_id, "train", lambda t: t["state"] == "running" and t["hostname"])
    worker = ti["hostname"]
    deadline = time.monotonic() + 300
    # both replicas' Jobs exist: the app was just submitted (a kill between the two creations
    # leaves a partial app, which a retry cannot tell from a whole one yet: not tested here)
    while len(stack.cluster.jobs(dag, "train")) < 2:
        assert time.monotonic() < deadline, _failure(api, stack, dag, run_id)
        time.sleep(0.02)
    stack.kill(worker)
    [app] = stack.cluster.apps(dag, "train")
    try:
        assert api.wait_run(dag, run_id) == "success", _failure(api, stack, dag, run_id)
        ti = api.tasks(dag, run_id)["train"]
        assert ti["try_number"] == 2 and ti["hostname"] == _other(worker), ti
        assert stack.cluster.apps(dag, "train") == {app}
        assert len(stack.cluster.jobs(dag, "train")) == 2
    finally:
        stack.start(worker)  # healthy again by the next test that needs it


def test_deferred_train_followed_by_triggerer_survives_its_kill(
    stack: CeleryStack, api: Api
) -> None:
    dag = "torchx_train_deferred"
    stack.wait_healthy()
    run_id = api.trigger(dag, _conf(stack, 4000))
    ti, _ = _running_train(api, stack, dag, run_id)
    # the worker slot is free while the app runs: the task waits in the triggerer
    ti = api.wait_task(dag, run_id, "train", lambda t: t["state"] == "deferred", timeout=120)
    [app] = stack.cluster.apps(dag, "train")
    stack.kill("airflow-triggerer")
    time.sleep(3)
    stack.start("airflow-triggerer")
    assert api.wait_run(dag, run_id) == "success", _failure(api, stack, dag, run_id)
    ti = api.tasks(dag, run_id)["train"]
    assert ti["try_number"] == 1, ti  # the trigger ran again: no retry of the task
    assert stack.cluster.apps(dag, "train") == {app}
    assert _job_name(api.xcom(dag, run_id, "train")["app_id"]) == app


def test_execution_timeout_shorter_than_app_cancels_it(stack: CeleryStack, api: Api) -> None:
    from torchx.runner import get_runner

    dag = "torchx_timeout"
    run_id = api.trigger(dag, {})
    assert api.wait_run(dag, run_id) == "failed", _failure(api, stack, dag, run_id)
    assert api.tasks(dag, run_id)["sleep"]["state"] == "failed"
    [app] = stack.cluster.apps(dag, "sleep")
    handle = f"kubernetes://torchx/{stack.cluster.namespace}:{app}"
    with get_runner() as runner:
        status = runner.status(handle)
    assert status is not None and status.state.name == "CANCELLED", status
    _wait_no_pods(stack.cluster, app)


def _wait_no_pods(cluster: Cluster, app: str) -> None:
    deadline = time.monotonic() + 120
    while pods := cluster.pods_of_app(app):
        assert time.monotonic() < deadline, [p.metadata.name for p in pods]
        time.sleep(1)
