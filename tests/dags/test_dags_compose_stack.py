"""docker-compose.yml for real: the Airflow stack on the local engine runs ``torchx_training``.

testcontainers' compose module drives Debian's docker-compose 1.29 (``Compose1`` below: v1 has
no ``up --wait`` and no ``ps --format json``, so health is read from the engine). The images are
the local ones from ``scripts/infra/compose-images.sh`` (built here if missing: about 4 minutes
the first time, instant after). The stack gets a unique project name and a free loopback port,
and ``down --volumes`` leaves no container, network or volume of it behind.

The DAG runs twice: with blocking operators, then with the scheduler's
``[operators] default_deferrable`` on (only the scheduler container is recreated). There the
triggerer is another container: it hands the local_cwd apps back and the tasks wait for them
in the worker, which the task log says. Between the two, ``torchx_env_check`` (written by the
test next to the example DAG) shows that a replica the operator launches sees none of the
stack's secrets (issue 19: the JWT secret, the API secret key, the DB URL, connections).

Without docker-compose or testcontainers (``make test`` installs both) the test is skipped with
the reason; in CI (``CI=true``) that is a failure, as for the ``docker`` marker.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
from _infra import missing

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1500)]

REPO = Path(__file__).resolve().parents[2]
DAG = "torchx_training"
TASKS = ("prepare_data", "train", "evaluate")
HANDBACK = "so the task waits for it in the worker instead"


def _compose_base() -> Any:
    try:
        from testcontainers.compose import DockerCompose
    except ImportError:
        missing("testcontainers", "testcontainers is not installed (pip install -e '.[dev]')")
    if shutil.which("docker-compose") is None:
        missing("docker-compose", "docker-compose is not installed (scripts/install-ci-deps.sh)")
    return DockerCompose


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_stack(env_file: Path, project: str) -> Any:
    """A testcontainers ``DockerCompose`` that speaks docker-compose 1.29 for ``project``."""

    @dataclass
    class Compose1(_compose_base()):  # type: ignore[misc]
        project_name: str = ""

        @cached_property
        def compose_command_property(self) -> list[str]:
            return [
                "docker-compose",
                "--project-name",
                self.project_name,
                "--file",
                str(REPO / "docker-compose.yml"),
                "--env-file",
                str(env_file),
            ]

        def start(self) -> None:  # v1: `up -d` (depends_on conditions order the start)
            self._run_command([*self.compose_command_property, "up", "-d"])

        def recreate(self, service: str) -> None:
            self._run_command([*self.compose_command_property, "up", "-d", "--no-deps", service])

    return Compose1(context=str(REPO), project_name=project)


class Engine:
    """What the engine holds for one compose project (by its label)."""

    def __init__(self, project: str) -> None:
        import docker

        self.client = docker.from_env(timeout=60)
        self.filters = {"label": f"com.docker.compose.project={project}"}

    def containers(self) -> dict[str, Any]:
        found = self.client.containers.list(all=True, filters=self.filters)
        return {c.labels["com.docker.compose.service"]: c for c in found}

    def leftovers(self) -> list[str]:
        names = [c.name for c in self.client.containers.list(all=True, filters=self.filters)]
        names += [n.name for n in self.client.networks.list(filters=self.filters)]
        names += [v.name for v in self.client.volumes.list(filters=self.filters)]
        return names

    def wait_healthy(self, timeout: float = 420) -> None:
        """Waits for airflow-init to exit 0 and every other service to be healthy."""
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            states = {}
            for service, c in self.containers().items():
                c.reload()
                state = c.attrs["State"]
                if service == "airflow-init":
                    states[service] = f"exit {state['ExitCode']}" if not state["Running"] else "run"
                else:
                    states[service] = state.get("Health", {}).get("Status", state["Status"])
            if states.get("airflow-init") not in (None, "run", "exit 0"):
                break
            if len(states) == 6 and all(s in ("healthy", "exit 0") for s in states.values()):
                return
            time.sleep(2)
        tails = {
            service: c.logs(tail=15).decode(errors="replace")
            for service, c in self.containers().items()
        }
        pytest.fail(f"compose stack not healthy: {states}\n{tails}", pytrace=False)


class Api:
    """The Airflow 3.3 REST API (/api/v2) with a simple-auth-manager token."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.token = self.call("GET", "/auth/token")["access_token"]

    def call(self, method: str, path: str, body: Any = None) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if getattr(self, "token", None):
            headers["Authorization"] = f"Bearer {self.token}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data, headers, method=method)
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read() or b"null")

    def run_dag(
        self, conf: dict[str, Any], timeout: float = 600, dag: str = DAG
    ) -> tuple[str, str]:
        """Triggers ``dag`` and returns ``(run id, final state)``."""
        self.wait_parsed(dag)
        self.call("PATCH", f"/api/v2/dags/{dag}", {"is_paused": False})
        run = self.call("POST", f"/api/v2/dags/{dag}/dagRuns", {"logical_date": None, "conf": conf})
        run_id = run["dag_run_id"]
        quoted = urllib.parse.quote(run_id)
        deadline = time.monotonic() + timeout
        state = run["state"]
        while time.monotonic() < deadline:
            state = self.call("GET", f"/api/v2/dags/{dag}/dagRuns/{quoted}")["state"]
            if state in ("success", "failed"):
                break
            time.sleep(3)
        return run_id, state

    def wait_parsed(self, dag: str, timeout: float = 300) -> None:
        """Waits until the dag-processor has stored ``dag``."""
        deadline = time.monotonic() + timeout
        while dag not in {d["dag_id"] for d in self.call("GET", "/api/v2/dags?limit=100")["dags"]}:
            if time.monotonic() > deadline:
                pytest.fail(f"DAG {dag} was not parsed within {timeout:.0f} s", pytrace=False)
            time.sleep(2)

    def tasks(self, run_id: str, dag: str = DAG) -> dict[str, dict[str, Any]]:
        quoted = urllib.parse.quote(run_id)
        found = self.call("GET", f"/api/v2/dags/{dag}/dagRuns/{quoted}/taskInstances")
        return {ti["task_id"]: ti for ti in found["task_instances"]}

    def log(self, run_id: str, task: dict[str, Any], dag: str = DAG) -> str:
        quoted = urllib.parse.quote(run_id)
        path = (
            f"/api/v2/dags/{dag}/dagRuns/{quoted}/taskInstances/{task['task_id']}"
            f"/logs/{task['try_number']}?full_content=true"
        )
        content = self.call("GET", path)["content"]
        return "\n".join(str(line.get("event", "")) for line in content)


def _scheduler_log(engine: Engine) -> str:
    lines = engine.containers()["airflow-scheduler"].logs(tail=400).decode(errors="replace")
    return "\n".join(line for line in lines.splitlines() if "/health" not in line)[-8000:]


def _run_and_check(api: Api, deferrable: bool) -> dict[str, str]:
    """Runs the training DAG; checks its tasks' logs (every try's: a loaded machine retries)."""
    run_id, state = api.run_dag({"steps": 10})
    tasks = api.tasks(run_id)
    tries = {name: _try_logs(api, run_id, ti) for name, ti in tasks.items()}
    logs = {name: "\n".join(found) for name, found in tries.items()}
    failed = {n: logs[n][-6000:] for n, ti in tasks.items() if ti["state"] != "success"}
    assert state == "success", {n: ti["state"] for n, ti in tasks.items()} | failed
    assert {name: tasks[name]["state"] for name in TASKS} == dict.fromkeys(TASKS, "success")
    assert "/0] dataset manifest written to" in logs["prepare_data"]
    # the replica's output (torchrun tees its workers' lines as "[default0]:...")
    assert re.search(r"\[train/0\] .*training on 2 workers, 10 steps", logs["train"])
    assert re.search(r"\[train/0\] .*checkpoint saved to", logs["train"])
    assert "/0] evaluated" in logs["evaluate"]
    for name in TASKS:
        _one_app_per_task(name, tries[name])
        assert (HANDBACK in logs[name]) == deferrable, name
    return logs


def _try_logs(api: Api, run_id: str, ti: dict[str, Any]) -> list[str]:
    """The task's log of each try, the first try first."""
    return [api.log(run_id, {**ti, "try_number": n}) for n in range(1, ti["try_number"] + 1)]


def _one_app_per_task(name: str, tries: list[str]) -> None:
    """One try launched the task's app; a later try (the machine too slow for a heartbeat)
    re-attached to that app instead of launching another, and saw it end."""
    launched = [m.group(1) for log in tries for m in re.finditer(r"launched TorchX app (\S+)", log)]
    assert len(launched) == 1, (name, len(tries), [log[-3000:] for log in tries])
    assert launched[0].startswith("local_cwd://"), (name, launched)
    assert f"TorchX app {launched[0]} SUCCEEDED" in tries[-1], (name, tries[-1][-3000:])


JWT_SECRET = "torchx-flow-local-only"  # docker-compose.yml: the JWT secret and the API secret key
ENV_DAG = "torchx_env_check"
ENV_DAG_FILE = f'''"""Written by tests/dags/test_dags_compose_stack.py: a replica reports its env."""

from datetime import datetime

from airflow.sdk import DAG

from torchx_airflow import TorchXOperator

with DAG("{ENV_DAG}", schedule=None, start_date=datetime(2025, 1, 1), catchup=False):
    TorchXOperator(
        task_id="env",
        component="utils.python",
        component_args=["--script", "/opt/airflow/dags/env_report.py"],
        env={{"SET_BY_THE_TASK": "1"}},
    )
'''
# the secret reversed, so that Airflow's log masking cannot hide a leak
ENV_REPORT = f'''import json, os
secret = "{JWT_SECRET[::-1]}"[::-1]
holding = sorted(k for k, v in os.environ.items() if secret in v)
print("REPLICA_ENV " + json.dumps({{"names": sorted(os.environ), "holding_secret": holding}}))
'''
STRIPPED = (
    "AIRFLOW__API_AUTH__JWT_SECRET",
    "AIRFLOW__API__SECRET_KEY",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
    "AIRFLOW_CONN_TORCHX_DEFAULT",
)


def _dag_folder() -> Path:
    """The stack's DAG folder: the example DAG and the env check, readable by the container."""
    folder = Path(tempfile.mkdtemp(prefix="txflow-compose-dags-"))
    shutil.copy(REPO / "dags/torchx_training.py", folder / "torchx_training.py")
    (folder / "torchx_env_check.py").write_text(ENV_DAG_FILE)
    (folder / "env_report.py").write_text(ENV_REPORT)
    for path in folder.iterdir():
        path.chmod(0o644)
    folder.chmod(0o755)
    return folder


def _check_replica_env(api: Api) -> None:
    """A local_cwd replica launched by the operator sees none of the stack's secrets."""
    run_id, state = api.run_dag({}, dag=ENV_DAG)
    task = api.tasks(run_id, dag=ENV_DAG)["env"]
    log = api.log(run_id, task, dag=ENV_DAG)
    assert state == "success", log[-4000:]
    line = next((x for x in log.splitlines() if "REPLICA_ENV " in x), None)
    assert line is not None, log[-4000:]
    report = json.loads(line.split("REPLICA_ENV ", 1)[1])
    names = set(report["names"])
    assert report["holding_secret"] == [], report
    assert names.isdisjoint(STRIPPED), sorted(names & set(STRIPPED))
    assert not [n for n in names if n.startswith("AIRFLOW_CONN_")]
    # what the task sets, and the non-secret rest of the task's env, still reach it
    assert {"SET_BY_THE_TASK", "PATH", "TORCHX_HOME"} <= names, sorted(names)


def test_compose_stack_runs_torchx_training_blocking_then_deferrable(tmp_path: Path) -> None:
    build = subprocess.run(
        [str(REPO / "scripts/infra/compose-images.sh")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    project = f"txflow-compose-{uuid.uuid4().hex[:8]}"
    port = _free_port()
    env_file = tmp_path / "compose.env"
    dags = _dag_folder()
    settings = f"AIRFLOW_PORT={port}\nTORCHX_FLOW_DAGS={dags}\n"
    env_file.write_text(settings + "TORCHX_FLOW_DEFERRABLE=false\n")
    stack, engine = make_stack(env_file, project), Engine(project)
    try:
        stack.start()
        engine.wait_healthy()
        api = Api(port)
        _run_and_check(api, deferrable=False)
        _check_replica_env(api)

        env_file.write_text(settings + "TORCHX_FLOW_DEFERRABLE=true\n")
        stack.recreate("airflow-scheduler")
        engine.wait_healthy()
        try:
            _run_and_check(api, deferrable=True)
        except AssertionError as e:
            raise AssertionError(f"{e}\nscheduler log:\n{_scheduler_log(engine)}") from None
    finally:
        stack.stop()
        shutil.rmtree(dags, ignore_errors=True)
    assert engine.leftovers() == []
