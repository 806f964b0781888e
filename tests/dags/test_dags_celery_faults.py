"""Issue 25's faults in the distributed Airflow stack (docker-compose.celery.yml), on Kubernetes.

One stack per module (``stack`` fixture; as in test_dags_celery.py: CeleryExecutor with Redis,
Postgres, two Celery workers on distinct hosts, a triggerer; the apps are pods of the local
cluster in a namespace of this module) with the DAGs of dags/torchx_celery_faults.py and
dags/torchx_celery_mapped.py. The apps wait for a marker file the test
writes, so a fault lands in the middle of ``train`` and the app ends when the test says, with
no fixed sleep. Each test leaves no Job or pod; the module leaves no container, network,
volume, namespace or thread.

- Dropped connections: the workers and the triggerer reach the API server of
  ``torchx_proxied`` through a loopback TCP proxy of this module (``tests/_tcp_proxy.py``); in
  the middle of ``train`` it resets every connection and, for 25 s, refuses new ones (worker
  mode and deferred; new connections left unanswered instead, the proxy's ``blackhole``, only
  delay the calls: the clients' own retries hide that). The app runs on, the task succeeds in
  its first try, exactly one app.
- A superseded try: try 1's supervisor is stopped (SIGSTOP: no heartbeat), the scheduler fails
  the try, try 2 re-attaches to the app; then try 1's task process gets SIGTERM (what Airflow's
  supervisor sends a try the server no longer wants) and its supervisor goes on. The app keeps
  running, try 2 succeeds with it.
- ``on_finish_action="keep"`` with the operator's own deadline (``execution_timeout``; in the
  worker and deferred): try 1 ends while its app runs, the retry takes that app; exactly one
  app ever.
- Secrets: a replica's environment, and its parent process' (``/proc/<ppid>/environ``), holds
  none of the stack's secrets (Fernet key, JWT secret, API secret key, ``AIRFLOW_CONN_*``, the
  Celery broker and result backend URLs, the kubeconfig's credentials): a ``kubernetes`` pod
  (its spec's env through the API and its process' own) and a ``local_cwd`` replica run by a
  Celery worker. **Not slurm**: the stack's workers cannot submit to the local Slurm (their
  image has no Slurm client, munge socket or slurm.conf): this module does not cover slurm.
- A mapped sweep: ``TorchXOperator.partial(...).expand(component_args=...)``, 3 DDP apps, all
  succeed, each with its map index in its labels.

``TORCHX_FLOW_CELERY_IMAGE`` runs the Airflow services on another image than the one
compose-images.sh builds (e.g. one with an older torchx-flow wheel: the tests then show which
fix each fault needs).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _airflow_rest import Api
from _celery_faults import (
    WAIT_SCRIPT,
    api_server_port,
    app_state,
    failure,
    job_name,
    leaked,
    read_worker_json,
    signal_process,
    task_instances,
    task_process,
    task_process_alive,
    through,
    until,
)
from _celery_stack import (
    INSTANCE_LABEL,
    SECRETS,
    SERVICES,
    WORKERS,
    CeleryStack,
    build_images,
)
from _infra import REPO, missing
from _tcp_proxy import TcpProxy

pytestmark = [
    pytest.mark.docker,
    pytest.mark.k8s,
    pytest.mark.slow,
    pytest.mark.timeout(2400),
]

DAGS = (
    "torchx_proxied_train",
    "torchx_proxied_train_deferred",
    "torchx_superseded",
    "torchx_keep_deadline",
    "torchx_keep_deadline_deferred",
    "torchx_env_dump",
)
FAULT_DAGS = REPO / "dags"
OUTAGE = 25.0  # seconds without the API server
MAP_INDEX_LABEL = "labels.torchx.pytorch.org/airflow-map-index"
FERNET_KEY = base64.urlsafe_b64encode(os.urandom(32)).decode()


@pytest.fixture(scope="module")
def proxy() -> Iterator[TcpProxy]:
    """The TCP proxy to the local cluster's API server, for the module."""
    with TcpProxy(("127.0.0.1", api_server_port()), lifetime=3000) as running:
        yield running


def _service_env(stack: CeleryStack, proxy_port: int) -> dict[str, dict[str, str]]:
    """One Fernet key for every Airflow service; the workers and the triggerer get the
    ``torchx_proxied`` connection (the cluster through the proxy); the workers get
    ``torchx_local`` (local_cwd)."""
    proxied = json.dumps(through(stack.connection(), proxy_port))
    local = json.dumps({"conn_type": "torchx", "extra": {"scheduler": "local_cwd"}})
    env = {s: {"AIRFLOW__CORE__FERNET_KEY": FERNET_KEY} for s in SERVICES if "airflow" in s}
    for service in (*WORKERS, "airflow-triggerer"):
        env[service]["AIRFLOW_CONN_TORCHX_PROXIED"] = proxied
    for worker in WORKERS:
        env[worker]["AIRFLOW_CONN_TORCHX_LOCAL"] = local
    return env


@pytest.fixture(scope="module")
def stack(proxy: TcpProxy) -> Iterator[CeleryStack]:
    """The Celery stack, up and healthy, with the fault DAGs parsed; removed afterwards."""
    if shutil.which("docker-compose") is None:
        missing("docker-compose", "docker-compose is not installed (scripts/install-ci-deps.sh)")
    build_images()
    # a try without heartbeat fails after 20 s (the superseded-try test waits that long)
    stack = CeleryStack(prefix="txflow-faults", settings={"HEARTBEAT_TIMEOUT": "20"})
    stack.extra_dags = [
        FAULT_DAGS / "torchx_celery_faults.py",
        FAULT_DAGS / "torchx_celery_mapped.py",
    ]
    stack.service_env = _service_env(stack, proxy.port)
    stack.image = os.environ.get("TORCHX_FLOW_CELERY_IMAGE", "")  # e.g. a build before a fix
    try:
        stack.up(DAGS)
        script = stack.workdir / "wait_marker.py"
        script.write_text(WAIT_SCRIPT)
        script.chmod(0o644)
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


def _trigger(stack: CeleryStack, api: Api, dag: str) -> tuple[str, Path]:
    """Starts ``dag`` with both workers healthy; returns (run id, the marker that ends its app)."""
    stack.wait_healthy()
    marker = stack.workdir / f"marker-{uuid.uuid4().hex[:8]}"
    conf = {"script": str(stack.workdir / "wait_marker.py"), "marker": str(marker)}
    return api.trigger(dag, conf), marker


def _running_pods(api: Api, stack: CeleryStack, dag: str, run_id: str, task: str, n: int) -> str:
    """Waits until the task's app runs ``n`` pods; returns the app's name (its only one)."""
    until(api, stack, dag, run_id, lambda: stack.cluster.running(dag, task, run_id, n), 0.5)
    [app] = stack.cluster.apps(dag, task, run_id)
    return app


def _assert_one_app_succeeded(
    stack: CeleryStack, api: Api, dag: str, run_id: str, app: str
) -> None:
    task = "wait" if dag.startswith("torchx_keep_deadline") else "train"
    assert stack.cluster.apps(dag, task, run_id) == {app}, failure(api, stack, dag, run_id)
    assert job_name(api.xcom(dag, run_id, task)["app_id"]) == app
    assert app_state(stack, app) == "SUCCEEDED"


@pytest.mark.parametrize("dag", ["torchx_proxied_train", "torchx_proxied_train_deferred"])
def test_api_server_cut_off_mid_train_app_survives_task_succeeds(
    stack: CeleryStack, api: Api, proxy: TcpProxy, dag: str
) -> None:
    run_id, marker = _trigger(stack, api, dag)
    waiting = "deferred" if dag.endswith("_deferred") else "running"
    api.wait_task(dag, run_id, "train", lambda t: t["state"] == waiting)
    app = _running_pods(api, stack, dag, run_id, "train", 2)
    proxy.outage(OUTAGE, "refuse")
    assert proxy.wait_restored(OUTAGE + 30), "the proxy did not come back"
    # nothing could reach the cluster: the app ran on (the test's own client goes direct)
    assert len(stack.cluster.running(dag, "train", run_id, 2)) == 2, app_state(stack, app)
    # the task talks to the cluster again (or gave up: then the checks below say how)
    until(
        api,
        stack,
        dag,
        run_id,
        lambda: proxy.recovered > 0 or api.run_state(dag, run_id) in ("success", "failed"),
        0.5,
    )
    marker.touch()
    assert api.wait_run(dag, run_id) == "success", failure(api, stack, dag, run_id)
    ti = api.tasks(dag, run_id)["train"]
    # a connection error is no reason to end a try: no retry was used
    assert ti["try_number"] == 1, failure(api, stack, dag, run_id)
    _assert_one_app_succeeded(stack, api, dag, run_id, app)
    assert len(stack.cluster.jobs(dag, "train", run_id)) == 2


def test_superseded_try_sigtermed_after_retry_reattached_leaves_the_app_to_it(
    stack: CeleryStack, api: Api
) -> None:
    dag = "torchx_superseded"
    run_id, marker = _trigger(stack, api, dag)
    api.wait_task(dag, run_id, "train", lambda t: t["state"] == "running" and t["hostname"])
    app = _running_pods(api, stack, dag, run_id, "train", 2)
    ti = api.tasks(dag, run_id)["train"]
    assert ti["try_number"] == 1 and ti["state"] == "running", ti
    worker, try1 = ti["hostname"], ti["id"]
    pid, supervisor = task_process(stack, worker, try1)
    # try 1's supervisor stops heartbeating: the scheduler fails the try, try 2 starts
    signal_process(stack, worker, supervisor, signal.SIGSTOP)
    try:
        api.wait_task(
            dag, run_id, "train", lambda t: t["try_number"] == 2 and t["state"] == "running"
        )
        # try 2 found the app (its log names it) and follows it
        until(api, stack, dag, run_id, lambda: app in api.log(dag, run_id, "train", 2), 1)
        # the superseded try 1 is told to stop, as its supervisor does once it hears of try 2
        signal_process(stack, worker, pid, signal.SIGTERM)
    finally:
        signal_process(stack, worker, supervisor, signal.SIGCONT)
    until(api, stack, dag, run_id, lambda: not task_process_alive(stack, worker, try1), 1)
    # try 1 stopped without touching the app try 2 follows
    assert app_state(stack, app) == "RUNNING", failure(api, stack, dag, run_id)
    marker.touch()
    assert api.wait_run(dag, run_id) == "success", failure(api, stack, dag, run_id)
    assert api.tasks(dag, run_id)["train"]["try_number"] == 2
    _assert_one_app_succeeded(stack, api, dag, run_id, app)


@pytest.mark.parametrize("dag", ["torchx_keep_deadline", "torchx_keep_deadline_deferred"])
def test_keep_and_deadline_then_retry_runs_one_app(stack: CeleryStack, api: Api, dag: str) -> None:
    run_id, marker = _trigger(stack, api, dag)
    app = _running_pods(api, stack, dag, run_id, "wait", 1)
    # try 1 ends at its deadline while the app runs (kept: on_finish_action="keep")
    api.wait_task(
        dag,
        run_id,
        "wait",
        lambda t: t["try_number"] >= 2 or t["state"] in ("up_for_retry", "failed"),
        timeout=300,
    )
    assert app_state(stack, app) == "RUNNING", failure(api, stack, dag, run_id)
    marker.touch()  # the app may end now: the retry must take it, not launch another
    assert api.wait_run(dag, run_id) == "success", failure(api, stack, dag, run_id)
    assert api.tasks(dag, run_id)["wait"]["try_number"] == 2
    _assert_one_app_succeeded(stack, api, dag, run_id, app)


def _secrets(stack: CeleryStack) -> list[str]:
    """The stack's secret values (and the parts of a URL or kubeconfig that give one away)."""
    kubeconfig = stack.connection()["extra"]["kubeconfig"]
    keys = re.findall(r"(?:client-key-data|token):\s*(\S{24})", kubeconfig)
    return [*SECRETS, FERNET_KEY, "redis://", "client-key-data", *keys]


def _pod_spec_env(pod: Any) -> dict[str, str]:
    env: dict[str, str] = {}
    for c in pod.spec.containers:
        env.update({e.name: e.value or "" for e in c.env or []})
        assert not c.env_from, c.env_from
    return env


def test_replica_environment_holds_no_stack_secret(stack: CeleryStack, api: Api) -> None:
    dag = "torchx_env_dump"
    out = stack.workdir / f"env-{uuid.uuid4().hex[:8]}"
    local_out = f"/tmp/txflow-env-{uuid.uuid4().hex[:8]}.json"
    run_id = api.trigger(dag, {"out": str(out), "local_out": local_out})
    assert api.wait_run(dag, run_id) == "success", failure(api, stack, dag, run_id)
    secrets = _secrets(stack)
    found: dict[str, list[str]] = {}
    pod_dump = json.loads((out / "k8s.json").read_text())
    found["kubernetes replica"] = leaked(pod_dump["self"], secrets)
    for pod in stack.cluster.pods(dag, "kubernetes", run_id):
        found[f"kubernetes pod spec {pod.metadata.name}"] = leaked(_pod_spec_env(pod), secrets)
    worker = api.tasks(dag, run_id)["local_cwd"]["hostname"]
    local = read_worker_json(stack, worker, local_out)
    assert local["self"] is not None and local["parent"] is not None, local["parent_cmd"]
    found["local_cwd replica"] = leaked(local["self"], secrets)
    found[f"local_cwd replica's parent ({local['parent_cmd']})"] = leaked(local["parent"], secrets)
    # variable NAMES only: no secret value is printed
    assert {where: names for where, names in found.items() if names} == {}


def _wait_parsed(api: Api, dag_id: str, filename: str) -> None:
    """Waits until ``dag_id`` is parsed; fails at once with its file's import error."""

    def parsed() -> bool:
        if any(d["dag_id"] == dag_id for d in api.call("GET", "/api/v2/dags?limit=100")["dags"]):
            return True
        errors = api.call("GET", "/api/v2/importErrors")["import_errors"]
        mine = [e["stack_trace"] for e in errors if e["filename"].endswith(filename)]
        assert not mine, f"{filename} does not load:\n{mine[0][-3000:]}"
        return False

    deadline = time.monotonic() + 300
    while not parsed():
        assert time.monotonic() < deadline, f"{dag_id} never parsed"
        time.sleep(2)


def test_mapped_sweep_of_3_ddp_apps_runs_on_kubernetes(stack: CeleryStack, api: Api) -> None:
    dag = "torchx_sweep"
    _wait_parsed(api, dag, "torchx_celery_mapped.py")
    run_id = api.trigger(dag, {})
    assert api.wait_run(dag, run_id) == "success", failure(api, stack, dag, run_id)
    tis = task_instances(api, dag, run_id)
    assert sorted((ti["map_index"], ti["state"]) for ti in tis) == [
        (i, "success") for i in range(3)
    ]
    # three apps of two replicas, each Job labelled with its task instance's map index
    jobs = stack.cluster.jobs(dag, "sweep", run_id)
    by_app: dict[str, set[str]] = {}
    for job in jobs:
        labels = job.metadata.labels
        by_app.setdefault(labels[INSTANCE_LABEL], set()).add(labels[MAP_INDEX_LABEL])
    indexes = sorted(i for found in by_app.values() for i in found)
    assert len(jobs) == 6 and len(by_app) == 3 and indexes == ["0", "1", "2"], by_app
    quoted = urllib.parse.quote(run_id)
    for index in range(3):
        path = (
            f"/api/v2/dags/{dag}/dagRuns/{quoted}/taskInstances/sweep/xcomEntries/return_value"
            f"?map_index={index}"
        )
        xcom = api.call("GET", path)["value"]
        assert xcom["state"] == "SUCCEEDED", xcom
        assert by_app[job_name(xcom["app_id"])] == {str(index)}
