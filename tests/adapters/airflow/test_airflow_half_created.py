"""An Airflow retry replaces a half-created Kubernetes app (plain mode) instead of waiting on it.

Real Airflow (``python -m torchx_airflow.local``: dag.test() on SQLite, then the next try of the
task) and the local cluster. The first try is killed with SIGKILL between its app's two Job
creations: rank 0's Job exists, its peer's never will (the test-only hook
``tests/_hooks/k8s_job_delay``, on the first try's ``PYTHONPATH``, makes the submitter sleep
before the second Job; it records a
``MARGIN`` s margin, ``TORCHX_K8S_SUBMIT_MARGIN``, so the app reads FAILED once rank 0 has run
that long). The retry starts at once, while the app still reads "submission in progress": it
waits for the verdict, then replaces the app in the same try.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest
from _airflow_support import airflow_home_env, dag_argv, kill_9_when, run_logged, write_dag

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("airflow") is None,
        reason="apache-airflow is not installed (pip install -e '.[airflow]')",
    ),
    pytest.mark.slow,
    pytest.mark.k8s,
]

# rank 0 waits for its peer to connect (as a DDP rendezvous would), the peer connects to it
RENDEZVOUS = """
import os, signal, socket, time
signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
host = os.environ.get("TORCHX_RANK0_HOST") or "localhost"
if host == "localhost":
    server = socket.create_server(("", 29500))
    server.settimeout(600)
    server.accept()
    print("rank 0: my peer came")
else:
    for _ in range(600):
        try:
            socket.create_connection((host, 29500), timeout=2).close()
            break
        except OSError:
            time.sleep(0.5)
    else:
        raise SystemExit("rank 0 never listened")
    print("peer: connected to rank 0")
"""

MARGIN = 30
"""Seconds rank 0 runs before the app reads FAILED (the retry starts well within them)."""

DAG = f"""
from torchx.specs.api import AppDef, Resource, Role

role = Role("main", image="torchx-flow/python:3.11", entrypoint="python3",
            args=["-c", {RENDEZVOUS!r}], num_replicas=2,
            resource=Resource(cpu=0.1, gpu=0, memMB=64))
with DAG("half_k8s", schedule=None, start_date=datetime(2024, 1, 1)):
    TorchXOperator(
        task_id="job", app=AppDef("half", roles=[role]), scheduler="kubernetes", retries=2
    )
"""


def test_a_retry_cancels_a_half_created_app_and_launches_a_complete_one(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from _k8s_job_delay import delay_env
    from _k8s_live import api_client, leftovers, namespace, wait_until

    from torchx.runner import get_runner
    from torchx.runner.labels import find_apps
    from torchx.specs.api import AppState

    client = api_client()
    kubeconfig = Path(os.environ["KUBECONFIG"]).read_text()
    with get_runner() as runner, namespace(client, prefix="tx-half-af") as ns:
        cfg = {"namespace": ns, "mode": "plain", "rank0_address": "pod_ip"}
        extra = {"kubeconfig": kubeconfig, "scheduler_cfg": cfg}
        connection = json.dumps({"conn_type": "torchx", "extra": extra})
        env = airflow_home_env(tmp_path, tmp_path_factory, AIRFLOW_CONN_TORCHX_DEFAULT=connection)
        dag_file = write_dag(env, DAG)

        def apps() -> list[Any]:
            return find_apps(runner, "kubernetes", {"airflow-dag-id": "half_k8s"}, cfg)

        def rank0_runs() -> bool:
            found = apps()
            if not found:
                return False
            status = runner.status(found[0].app_handle)
            return status is not None and status.roles[0].replicas[0].state in (
                AppState.RUNNING,
                AppState.SUCCEEDED,
            )

        first = {**delay_env(600, env), "TORCHX_K8S_SUBMIT_MARGIN": str(MARGIN)}
        kill_9_when(dag_argv(dag_file, "half_k8s"), first, tmp_path / "first.log", rank0_runs)
        (half,) = apps()
        old = half.app_handle.rpartition(":")[2]
        status = runner.status(half.app_handle)
        assert status is not None and status.state == AppState.PENDING, status
        assert status.msg.startswith("submission in progress: main[1] not created yet")

        summary, output = run_logged(
            env, dag_argv(dag_file, "half_k8s", "job"), tmp_path / "retry.log"
        )
        task = summary["tasks"]["job"]
        assert task["state"] == "success", output[-3000:]
        assert "by its labels" in output, output[-3000:]
        # the retry waited for the verdict instead of re-attaching (and failing with the app)
        assert "submission in progress: main[1] not created yet; waiting" in output, output[-3000:]
        assert "is FAILED -> launch" in output, output[-3000:]
        handle = task["xcom"]["return_value"]["app_handle"]
        assert handle != half.app_handle
        new = runner.status(handle)
        assert new is not None and new.state == AppState.SUCCEEDED
        assert [r.state for r in new.roles[0].replicas] == [AppState.SUCCEEDED] * 2
        # the half-created app was stopped, not left waiting for its peer
        wait_until("its rank 0's pod to go", lambda: "pods" not in leftovers(client, ns, old))
        status = runner.status(half.app_handle)
        assert status is not None and status.state == AppState.FAILED
        assert status.msg.startswith("app half-created: main[1] has no Job"), status.msg
    client.close()
