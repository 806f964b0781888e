"""An Airflow task's retry re-attaches to the same JobSet after its worker was killed mid-follow.

Real Airflow (``dag.test()`` on SQLite, then the next try of the task of that run, as the
scheduler starts it after a retry) against the current cluster in JobSet mode. The cluster and
the run options come from the ``torchx_default`` connection only (its ``kubeconfig`` extra),
not from the worker's environment. The first try is killed with SIGKILL once its app runs and
the re-attach record is written; the retry finds the record, takes the app over and follows it
to its end: one JobSet, the same handle, its log in the retry's task log. The app runs until
the test creates a file in a host directory it mounts (once the retry has taken it over), so
how long Airflow takes to start the retry does not matter.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _k8s_current import BUSYBOX, module_client
from _k8s_live import namespace

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("airflow") is None,
        reason="apache-airflow is not installed (pip install -e '.[airflow]')",
    ),
    pytest.mark.k8s,
    pytest.mark.slow,
]

DAG_BODY = """
with DAG("crash_jobset", schedule=None, start_date=datetime(2024, 1, 1)):
    TorchXOperator(
        task_id="job",
        component="utils.sh",
        component_args=[
            "--image", "{image}", "--mounts", "type=bind,src={gate},dst=/gate",
            "sh", "-c", "until [ -f /gate/go ]; do sleep 1; done; echo jobset done",
        ],
        scheduler="kubernetes",
        poll_interval=1,
        retries=2,
    )
"""


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    yield from module_client()


def jobsets(client: Any, ns: str) -> list[str]:
    from kubernetes import client as k8s

    found = k8s.CustomObjectsApi(client).list_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", ns, "jobsets"
    )
    return [item["metadata"]["name"] for item in found["items"]]


def test_kill_9_mid_follow_then_the_retry_reattaches_to_the_same_jobset(
    client: Any, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from _airflow_support import (
        airflow_home_env,
        dag_argv,
        kill_9_when,
        wait_for,
        write_dag,
    )

    from torchx.runner import get_runner
    from torchx.runner.labels import find_apps

    kubeconfig = Path(os.environ["KUBECONFIG"]).read_text()
    with namespace(client, "tx-jsreat") as ns, get_runner() as runner:
        cfg = {
            "mode": "jobset",
            "namespace": ns,
            "image_pull_policy": "IfNotPresent",
            "reserved_millicpu": 900,
        }
        extra = {"kubeconfig": kubeconfig, "scheduler_cfg": cfg}
        connection = json.dumps({"conn_type": "torchx", "extra": extra})
        env = {
            **airflow_home_env(tmp_path, tmp_path_factory),
            "AIRFLOW_CONN_TORCHX_DEFAULT": connection,
        }
        env.pop("KUBECONFIG", None)  # the cluster is known from the connection only
        gate = tmp_path / "gate"
        gate.mkdir()
        dag_file = write_dag(env, DAG_BODY.format(image=BUSYBOX, gate=gate))
        first = tmp_path / "first.log"

        def apps() -> list[Any]:
            return find_apps(runner, "kubernetes", {"airflow-dag-id": "crash_jobset"}, cfg)

        def mid_follow() -> bool:  # the record is written and the app runs
            if "kept the app handle for re-attach" not in first.read_text():
                return False
            return any(a.state.name == "RUNNING" for a in apps())

        kill_9_when(dag_argv(dag_file, "crash_jobset"), env, first, mid_follow)
        (app,) = apps()
        assert app.state.name == "RUNNING"
        assert jobsets(client, ns) == [app.app_handle.rsplit(":", 1)[-1]]
        retry = tmp_path / "retry.log"
        with retry.open("w") as log:
            cmd = dag_argv(dag_file, "crash_jobset", "job")
            proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: "-> reattach" in retry.read_text() or proc.poll() is not None, 240)
            (gate / "go").touch()  # the app may end now
            assert proc.wait(timeout=300) == 0, retry.read_text()[-3000:]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        output = retry.read_text()
        summary = json.loads(output.strip().splitlines()[-1])
        task = summary["tasks"]["job"]
        assert task["state"] == "success", output[-3000:]
        assert f"{app.app_handle} is RUNNING -> reattach" in output, output[-3000:]
        assert "by its labels" not in output  # found by the record the first try wrote
        assert task["xcom"]["return_value"]["app_handle"] == app.app_handle
        assert task["xcom"]["return_value"]["state"] == "SUCCEEDED"
        assert "[sh/0] jobset done" in output, output[-3000:]
        assert [a.app_handle for a in apps()] == [app.app_handle]  # no second app
        assert len(jobsets(client, ns)) == 1
