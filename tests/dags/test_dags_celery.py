"""The distributed Airflow stack (docker-compose.celery.yml) with faults injected.

One stack for this module and test_dags_celery_lineage.py (``celery_stack``, tests/dags/conftest.py
and tests/_celery_shared.py; about a minute to start): CeleryExecutor with two Celery workers on
distinct hosts, triggerer, scheduler, dag-processor, api-server, Postgres and Redis, on the
local Docker engine; the apps run as pods of the local Kubernetes cluster (plain mode, a
namespace of the stack, kubeconfig given inline in the ``torchx`` connection). DAGs: the
example DAG and dags/torchx_celery.py (variants of it with ``train`` as a 2-replica DDP app).
Each test starts with an empty namespace and leaves none of its Jobs or pods; the stack's
removal leaves no container, network, volume or namespace.

The faults: a worker killed (SIGKILL) while ``train`` runs, right after the launch, and between
the two Job creations of its app (a half-created app: the retry stops it and launches a whole
one); the triggerer killed while it follows a deferred app; an ``execution_timeout`` shorter than
the app, waited for in a worker and in the triggerer (the deferral times out); a trigger that
cannot reach the cluster (the triggerer's ``torchx_trigger_fault`` connection points at a closed
port, the workers' at the cluster: the task resumes on a worker, fails with the trigger's
message and cancels the app); clearing a succeeded ``train``. The replicas' environment is
checked for the stack's secrets.

The half-created and trigger faults use connections of their own (``torchx_half_created``,
``torchx_trigger_fault``) given to the workers and the triggerer only, in a compose override
file: the other tests' connection and timing are the stack's. The half-created fault's delay
between two Job creations is the test-only hook ``tests/_hooks/k8s_job_delay`` (a
``sitecustomize`` mounted into the workers only and put on their ``PYTHONPATH``), for the Jobs
of ``torchx_train_half`` only: torchx reads no setting for it.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from _airflow_rest import Api
from _celery_stack import SECRETS, WORKERS, CeleryStack, Cluster
from _support import open_gate, wait_until

pytestmark = [
    pytest.mark.docker,
    pytest.mark.k8s,
    pytest.mark.slow,
    pytest.mark.timeout(1500),
]

K8S = {"scheduler": "kubernetes"}
T = TypeVar("T")


@pytest.fixture
def stack(celery_stack: CeleryStack) -> CeleryStack:
    """The Celery stack (tests/_celery_shared.py), up and healthy, with the DAGs parsed."""
    return celery_stack


@pytest.fixture
def api(stack: CeleryStack) -> Iterator[Api]:
    """The stack's API; the namespace is emptied after each test (its Jobs and pods)."""
    assert stack.api is not None
    yield stack.api
    stack.cluster.empty()
    assert stack.cluster.leftovers() == []


def _conf(stack: CeleryStack, steps: int) -> dict[str, Any]:
    return {**K8S, "workdir": str(stack.workdir / f"w{time.monotonic_ns()}"), "steps": steps}


def _held(stack: CeleryStack) -> dict[str, Any]:
    """A run's conf whose training, after 20 steps, waits for its gate (``open_gate``; the pods
    mount the work directory): the app runs as long as the fault needs, however loaded the
    machine."""
    conf = _conf(stack, 20)
    gate = Path(conf["workdir"]) / "gate"
    gate.mkdir(parents=True)
    return {**conf, "hold_file": str(gate / "open")}


def _release(conf: dict[str, Any]) -> None:
    """Lets the held training of ``conf`` (:func:`_held`) save its checkpoint and end."""
    open_gate(Path(conf["hold_file"]).parent)


def _retry_found_it_alive(api: Api, stack: CeleryStack, dag: str, run_id: str) -> None:
    """Waits until try 2 of ``train`` found the app of try 1 not ended (its log says so)."""

    def found() -> bool:
        if api.tasks(dag, run_id)["train"]["try_number"] != 2:
            return False
        log = api.log(dag, run_id, "train", 2)
        return " is RUNNING -> " in log or " is PENDING -> " in log

    _until(api, stack, dag, run_id, found, 1.0)


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
    assert stack.cluster.apps(dag, "train", run_id) == {_job_name(train["app_id"])}
    assert len(stack.cluster.jobs(dag, "train", run_id)) == 2
    log = api.log(dag, run_id, "train", 1)
    assert "training on 2 workers, 100 steps" in log, log[-3000:]
    assert "evaluated" in api.log(dag, run_id, "evaluate", 1)
    # what every replica of the run was given: no Airflow variable, no secret
    for pod in stack.cluster.pods(dag, "", run_id):
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
    assert stack.cluster.apps(dag, "train", run_id) == {first, second}


def _until(
    api: Api, stack: CeleryStack, dag: str, run_id: str, found: Callable[[], T], interval: float
) -> T:
    """``found()`` once it is truthy, asked every ``interval`` s for at most 300 s.

    Not a timed assertion: the bound only stops a hung test, with the run's details.
    """
    try:
        return wait_until(found, 300, f"the state {dag} {run_id} waits for", interval)
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}\n{_failure(api, stack, dag, run_id)}") from None


def _started_train(stack: CeleryStack, api: Api, dag: str, conf: dict[str, Any]) -> tuple[str, str]:
    """Triggers ``dag`` with both workers healthy; returns (run id, the worker running train)."""
    stack.wait_healthy()  # an earlier test may have restarted a worker
    run_id = api.trigger(dag, conf)
    ti = api.wait_task(dag, run_id, "train", lambda t: t["state"] == "running" and t["hostname"])
    return run_id, ti["hostname"]


def _running_train(api: Api, stack: CeleryStack, dag: str, run_id: str) -> tuple[dict, list]:
    """Waits until ``train`` runs on a worker and its 2 replicas run; returns (ti, pods)."""
    api.wait_task(dag, run_id, "train", lambda t: t["state"] in ("running", "deferred"))
    pods = _until(
        api, stack, dag, run_id, lambda: stack.cluster.running(dag, "train", run_id, 2), 0.5
    )
    return api.tasks(dag, run_id)["train"], pods


def test_worker_killed_while_train_runs_retry_reattaches_on_other_worker(
    stack: CeleryStack, api: Api
) -> None:
    dag = "torchx_train"
    stack.wait_healthy()  # both workers (an earlier test may have restarted one)
    conf = _held(stack)
    run_id = api.trigger(dag, conf)
    ti, pods = _running_train(api, stack, dag, run_id)
    worker = ti["hostname"]
    assert worker in WORKERS
    # the real environment of a running replica's main process
    for pod in pods:
        _assert_no_secrets(stack.cluster.environ(pod), pod.metadata.name)
    [app] = stack.cluster.apps(dag, "train", run_id)
    stack.kill(worker)
    try:
        _retry_found_it_alive(api, stack, dag, run_id)
        _release(conf)
        state = api.wait_run(dag, run_id)
        assert state == "success", _failure(api, stack, dag, run_id)
        ti = api.tasks(dag, run_id)["train"]
        assert ti["try_number"] == 2 and ti["hostname"] == _other(worker), ti
        # the retry followed the app the killed try launched: no second set of Jobs
        assert stack.cluster.apps(dag, "train", run_id) == {app}
        assert _job_name(api.xcom(dag, run_id, "train")["app_id"]) == app
    finally:
        stack.start(worker)  # healthy again by the next test that needs it


def test_worker_killed_in_first_second_retry_finds_app_by_labels(
    stack: CeleryStack, api: Api
) -> None:
    dag = "torchx_train"
    conf = _held(stack)
    run_id, worker = _started_train(stack, api, dag, conf)
    # both replicas' Jobs exist: the app was just submitted (a kill between the two creations:
    # test_worker_killed_between_job_creations_retry_replaces_half_created_app)
    _until(
        api, stack, dag, run_id, lambda: len(stack.cluster.jobs(dag, "train", run_id)) >= 2, 0.02
    )
    stack.kill(worker)
    [app] = stack.cluster.apps(dag, "train", run_id)
    try:
        _retry_found_it_alive(api, stack, dag, run_id)
        _release(conf)
        assert api.wait_run(dag, run_id) == "success", _failure(api, stack, dag, run_id)
        ti = api.tasks(dag, run_id)["train"]
        assert ti["try_number"] == 2 and ti["hostname"] == _other(worker), ti
        assert stack.cluster.apps(dag, "train", run_id) == {app}
        assert len(stack.cluster.jobs(dag, "train", run_id)) == 2
    finally:
        stack.start(worker)  # healthy again by the next test that needs it


def _triggerer(ti: dict[str, Any]) -> int | None:
    """The id of the triggerer job that runs a deferred task instance's trigger, if any."""
    trigger = ti.get("trigger") if ti.get("state") == "deferred" else None
    return trigger.get("triggerer_id") if trigger else None


def test_deferred_train_followed_by_triggerer_survives_its_kill(
    stack: CeleryStack, api: Api
) -> None:
    dag = "torchx_train_deferred"
    stack.wait_healthy()
    conf = _held(stack)
    run_id = api.trigger(dag, conf)
    ti, _ = _running_train(api, stack, dag, run_id)
    # the worker slot is free while the app runs: the task waits in the triggerer
    ti = api.wait_task(dag, run_id, "train", lambda t: _triggerer(t) is not None, timeout=120)
    killed = _triggerer(ti)
    [app] = stack.cluster.apps(dag, "train", run_id)
    stack.kill("airflow-triggerer")
    time.sleep(3)
    stack.start("airflow-triggerer")
    # the new triggerer takes the trigger over while the app still runs, then it may end
    api.wait_task(dag, run_id, "train", lambda t: _triggerer(t) not in (None, killed))
    _release(conf)
    assert api.wait_run(dag, run_id) == "success", _failure(api, stack, dag, run_id)
    ti = api.tasks(dag, run_id)["train"]
    assert ti["try_number"] == 1, ti  # the trigger ran again: no retry of the task
    assert stack.cluster.apps(dag, "train", run_id) == {app}
    assert _job_name(api.xcom(dag, run_id, "train")["app_id"]) == app


@pytest.mark.parametrize("dag", ["torchx_timeout", "torchx_timeout_deferred"])
def test_execution_timeout_shorter_than_app_cancels_it(
    stack: CeleryStack, api: Api, dag: str
) -> None:
    run_id = api.trigger(dag, {})
    if dag == "torchx_timeout_deferred":  # the app is followed by the triggerer, no worker
        api.wait_task(dag, run_id, "sleep", lambda t: t["state"] == "deferred", timeout=120)
    assert api.wait_run(dag, run_id) == "failed", _failure(api, stack, dag, run_id)
    ti = api.tasks(dag, run_id)["sleep"]
    assert ti["state"] == "failed" and ti["try_number"] == 1, ti
    log = api.log(dag, run_id, "sleep", 1)
    if dag == "torchx_timeout_deferred":  # the trigger enforces the deadline itself
        assert "deadline passed: cancelling TorchX app" in log, log[-3000:]
    [app] = stack.cluster.apps(dag, "sleep", run_id)
    assert _app_state(stack, app) == "CANCELLED"
    _wait_no_pods(stack.cluster, app)


def test_trigger_that_cannot_reach_the_cluster_fails_the_task_and_leaves_the_app(
    stack: CeleryStack, api: Api
) -> None:
    """An unanswering cluster is retried for ``transient_timeout`` (20 s here), then the task
    fails; nothing says the app is unhealthy, so it is left running for a retry to re-attach to."""
    from torchx.runner import get_runner

    dag = "torchx_trigger_fault"
    run_id = api.trigger(dag, {})
    # the workers launch on the cluster; the triggerer's status calls are refused
    assert api.wait_run(dag, run_id) == "failed", _failure(api, stack, dag, run_id)
    ti = api.tasks(dag, run_id)["sleep"]
    assert ti["state"] == "failed" and ti["try_number"] == 1, ti
    assert ti["hostname"] in WORKERS, ti  # the error event resumed the task on a worker
    [app] = stack.cluster.apps(dag, "sleep", run_id)
    # the error the task failed with (its log record's error details) is the trigger's message
    log = _log_records(api, dag, run_id, "sleep", 1)
    handle = f"kubernetes://torchx/{stack.cluster.namespace}:{app}"
    assert f"TorchX app {handle}: the kubernetes scheduler did not answer" in log, log[-3000:]
    assert "the app was left as it is" in log, log[-3000:]
    assert _app_state(stack, app) == "RUNNING"
    with get_runner() as runner:  # the test's own clean-up
        runner.cancel(handle)
    _wait_no_pods(stack.cluster, app)


def test_worker_killed_between_job_creations_retry_replaces_half_created_app(
    stack: CeleryStack, api: Api
) -> None:
    dag = "torchx_train_half"
    run_id, worker = _started_train(stack, api, dag, _conf(stack, 20))

    def running_pods() -> list[Any]:
        return [p for p in stack.cluster.pods(dag, "train", run_id) if p.status.phase == "Running"]

    # rank 0's pod runs (its IP is known): the submitter sleeps 15 s before rank 1's Job
    pods = _until(api, stack, dag, run_id, running_pods, 0.2)
    stack.kill(worker)
    try:
        [half] = stack.cluster.apps(dag, "train", run_id)
        assert len(stack.cluster.jobs(dag, "train", run_id)) == 1 and len(pods) == 1, pods
        assert api.wait_run(dag, run_id) == "success", _failure(api, stack, dag, run_id)
        ti = api.tasks(dag, run_id)["train"]
        assert ti["try_number"] == 2 and ti["hostname"] == _other(worker), ti
        log = api.log(dag, run_id, "train", 2)
        assert "by its labels" in log and "is FAILED -> launch" in log, log[-3000:]
        new = _job_name(api.xcom(dag, run_id, "train")["app_id"])
        # exactly two apps: the half one (stopped, its rank 0 gone) and the whole one
        assert new != half and stack.cluster.apps(dag, "train", run_id) == {half, new}
        assert len(stack.cluster.jobs(dag, "train", run_id)) == 3
        assert _app_state(stack, new) == "SUCCEEDED"
        _wait_no_pods(stack.cluster, half)
        assert _app_state(stack, half) == "FAILED"
    finally:
        stack.start(worker)  # healthy again by the next test that needs it


def _log_records(api: Api, dag_id: str, run_id: str, task_id: str, try_number: int) -> str:
    """A try's log records as JSON lines: every field (``Api.log`` keeps the messages only)."""
    quoted = urllib.parse.quote(run_id)
    path = (
        f"/api/v2/dags/{dag_id}/dagRuns/{quoted}/taskInstances/{task_id}"
        f"/logs/{try_number}?full_content=true"
    )
    return "\n".join(json.dumps(line) for line in api.call("GET", path)["content"])


def _app_state(stack: CeleryStack, app: str) -> str:
    """The app's state as the scheduler reads it from the cluster (not Airflow's view)."""
    from torchx.runner import get_runner

    with get_runner() as runner:
        status = runner.status(f"kubernetes://torchx/{stack.cluster.namespace}:{app}")
    assert status is not None, app
    return status.state.name


def _wait_no_pods(cluster: Cluster, app: str) -> None:
    wait_until(lambda: not cluster.pods_of_app(app), 120, f"the pods of {app} to go", 1)
