"""The one Celery stack of the ``stack`` xdist group: test_dags_celery.py and its lineage module.

Starting a stack costs about a minute, removing it half of one: both modules use this one
(the ``celery_stack`` fixture, tests/dags/conftest.py), started by the first test that needs it
and removed after the last one in a row that does (:func:`release`). It holds every DAG of
both modules, the fault connections of test_dags_celery.py (given to the workers and the
triggerer only, in a compose override file) and OpenLineage on both workers, each writing its
own events file: ``airflow-worker-1``'s listener runs in a thread (``[openlineage]
execute_in_thread``, the README's setting), ``airflow-worker-2``'s forked (the provider's
default), so the lineage test covers both modes on real Celery workers by stopping the other
worker while it runs. A dead worker's task (or triggerer's trigger) moves on after 20 s without
a heartbeat.
"""

from __future__ import annotations

import json
import shutil
import socket

from _celery_stack import WORKERS, CeleryStack, build_images, closed_port, unreachable
from _infra import REPO, missing
from _k8s_job_delay import CONTAINER_DIR, HOOK_DIR, hook_vars

__all__ = [
    "DAGS",
    "LINEAGE_DAG",
    "LINEAGE_DAG_FILE",
    "LISTENER_MODES",
    "OPENLINEAGE_NAMESPACE",
    "events_file",
    "get",
    "release",
]

LINEAGE_DAG = "torchx_lineage"
LINEAGE_DAG_FILE = REPO / "dags" / "torchx_celery_lineage.py"
DAGS = (
    "torchx_training_ddp",
    "torchx_train",
    "torchx_train_deferred",
    "torchx_train_half",
    "torchx_timeout",
    "torchx_timeout_deferred",
    "torchx_trigger_fault",
    LINEAGE_DAG,
)
OPENLINEAGE_NAMESPACE = "torchx-celery"
LISTENER_MODES = {"thread": "airflow-worker-1", "fork": "airflow-worker-2"}
"""The worker whose OpenLineage listener runs in each mode."""
# the submitter sleeps 15 s before rank 1's Job (the test-only hook, in the workers); an app
# missing a Job reads FAILED once rank 0's container started more than 10 s ago
HALF_DELAY = hook_vars(15, dag_id="torchx_train_half", folder=CONTAINER_DIR)
HALF_CREATED = {"k8s_submit_margin": 10}


class _Shared:
    """The stack while it is up, and the closed port its trigger-fault connection names."""

    stack: CeleryStack | None = None
    held: socket.socket | None = None


def events_file(worker: str) -> str:
    """The file ``worker``'s OpenLineage transport appends its events to (logs volume)."""
    return f"/opt/airflow/logs/openlineage-{worker}.jsonl"


def _lineage_env(worker: str) -> dict[str, str]:
    """The worker's file transport to a file of its own, its listener's mode."""
    transport = {"type": "file", "log_file_path": events_file(worker), "append": True}
    return {
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": OPENLINEAGE_NAMESPACE,
        "AIRFLOW__OPENLINEAGE__EXECUTE_IN_THREAD": str(worker == LISTENER_MODES["thread"]),
    }


def _service_env(stack: CeleryStack, closed: int) -> dict[str, dict[str, str]]:
    """The fault connections: the triggerer cannot reach the cluster (its API server is
    moved to the ``closed`` loopback port), the workers can; OpenLineage on the workers."""
    good = stack.connection()
    half = {**good, "extra": {**good["extra"], "scheduler_params": HALF_CREATED}}
    workers = {
        "AIRFLOW_CONN_TORCHX_TRIGGER_FAULT": json.dumps(good),
        "AIRFLOW_CONN_TORCHX_HALF_CREATED": json.dumps(half),
        **HALF_DELAY,
    }
    env = {worker: {**workers, **_lineage_env(worker)} for worker in WORKERS}
    env["airflow-triggerer"] = {
        "AIRFLOW_CONN_TORCHX_TRIGGER_FAULT": json.dumps(unreachable(good, closed))
    }
    return env


def get() -> CeleryStack:
    """The shared stack, up and healthy with every DAG parsed (started on first use)."""
    if _Shared.stack is not None:
        return _Shared.stack
    if shutil.which("docker-compose") is None:
        missing("docker-compose", "docker-compose is not installed (scripts/install-ci-deps.sh)")
    build_images()
    stack = CeleryStack(settings={"HEARTBEAT_TIMEOUT": "20"})
    held = closed_port()
    _Shared.stack, _Shared.held = stack, held
    stack.service_env = _service_env(stack, held.getsockname()[1])
    stack.service_volumes = dict.fromkeys(WORKERS, [f"{HOOK_DIR}:{CONTAINER_DIR}:ro"])
    stack.extra_dags = [LINEAGE_DAG_FILE]
    try:
        stack.up(DAGS)
    except BaseException:
        release()
        raise
    return stack


def release() -> None:
    """Removes the shared stack if it is up (a no-op otherwise).

    Raises:
        AssertionError: a container, network or volume of the stack was left behind.
    """
    stack, held = _Shared.stack, _Shared.held
    _Shared.stack = _Shared.held = None
    if stack is None:
        return
    try:
        left = stack.down()
    finally:
        if held is not None:
            held.close()
    assert left == [], f"left behind: {left}"
