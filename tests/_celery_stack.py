"""The Celery stack (docker-compose.celery.yml) for tests and bench: start, drive, break, remove.

:class:`CeleryStack` starts the stack under a unique compose project on free loopback ports, with
a DAG folder holding the example DAG and dags/torchx_celery.py, and a ``torchx``
connection naming a fresh namespace of the local cluster (kubeconfig inline, see
:func:`connection`). :class:`Api` is Airflow's REST API, :class:`Cluster` what the namespace
holds. ``down`` removes every container, network and volume of the project and the namespace.
``service_env`` adds variables to some services only, through a compose override file (e.g. a
connection the triggerer sees differently from the workers, see :func:`unreachable`);
``extra_dags`` adds DAG files to the folder, ``image`` runs the Airflow services on another
image (the same override file).

The namespace is on the current local cluster (Kubernetes 1.35 with CoreDNS,
scripts/infra/k8s-current.sh). Its pods run ``torchx-flow/python:3.11`` with this venv (and its
torch) on ``PATH``, loaded into the cluster's containerd for the stack's life, with the checkout,
the venv and its interpreter mounted read-only at their host paths (``_k8s_live.mount_tokens``)
and the checkout's ``examples/`` and ``pipelines/`` where the stack's DAGs name them
(``/opt/torchx-flow``): a copy of the 8 GB ``torchx-flow/torch`` image in the cluster's
containerd would cost 12-16 GB of disk and minutes on a cold machine. Rank 0 is reached by its
DNS name (``rank0_address = dns``).

docker-compose 1.29 (Debian's) is driven directly: it has no ``up --wait``, so health is read
from the engine.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from _airflow_rest import Api
from _infra import REPO
from _k8s_current import loaded_venv_image
from _k8s_live import mount_tokens

from torchx.schedulers.labels import label_value

COMPOSE_FILE = REPO / "docker-compose.celery.yml"
SERVICES = (
    "postgres",
    "redis",
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
    "airflow-worker-1",
    "airflow-worker-2",
)
WORKERS = ("airflow-worker-1", "airflow-worker-2")  # service name = hostname
OPT = "/opt/torchx-flow"  # where the stack's DAGs find examples/ and pipelines/ (the compose file)
TASK_LABEL = "labels.torchx.pytorch.org/airflow-task-id"
DAG_LABEL = "labels.torchx.pytorch.org/airflow-dag-id"
RUN_LABEL = "labels.torchx.pytorch.org/airflow-run-id"
INSTANCE_LABEL = "app.kubernetes.io/instance"
# the stack's secrets (docker-compose.celery.yml): no replica may see them
SECRETS = ("torchx-flow-local-only-jwt", "torchx-flow-local-only-key", "airflow:airflow@")


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build_images() -> None:
    """Builds the stack's images (instant when up to date)."""
    script = REPO / "scripts" / "infra" / "compose-images.sh"
    done = subprocess.run([str(script)], capture_output=True, text=True, timeout=1500)
    if done.returncode != 0:
        raise RuntimeError(f"{script.name} failed:\n{done.stderr[-3000:]}")


def pod_mounts(workdir: str) -> str:
    """The pods' mounts (``parse_mounts`` tokens, comma-joined).

    The work directory is a host directory every pod mounts at the same path, writable (the
    steps hand data and the checkpoint over there); the checkout, the venv and its interpreter
    read-only at their own paths; ``examples/`` and ``pipelines/`` read-only under :data:`OPT`.
    """
    tokens = mount_tokens("type=bind", f"src={workdir}", f"dst={workdir}")
    for folder in ("examples", "pipelines"):
        tokens += ["type=bind", f"src={REPO / folder}", f"dst={OPT}/{folder}", "readonly"]
    return ",".join(tokens)


def torchxconfig(namespace: str, workdir: str, image: str) -> str:
    """The connection's ``.torchxconfig``: plain mode in ``namespace``, the pods' image and mounts.

    Rank 0 by its DNS name. The node has 2 CPUs: requests stay small.
    """
    mounts = pod_mounts(workdir)
    sections = [
        f"[kubernetes]\nmode = plain\nnamespace = {namespace}\nrank0_address = dns\n"
        "reserved_millicpu = 950\n"
    ]
    for component in ("utils.python", "dist.ddp", "utils.sh", "utils.echo"):
        sections.append(f"[component:{component}]\nimage = {image}\nmounts = {mounts}\n")
    return "\n".join(sections)


def connection(namespace: str, workdir: str, image: str) -> dict[str, Any]:
    """The ``torchx`` connection: the kubernetes scheduler, the kubeconfig's text, the config."""
    kubeconfig = Path(os.environ["KUBECONFIG"]).read_text()
    return {
        "conn_type": "torchx",
        "extra": {
            "scheduler": "kubernetes",
            "kubeconfig": kubeconfig,
            "torchxconfig": torchxconfig(namespace, workdir, image),
        },
    }


def closed_port() -> socket.socket:
    """A socket bound to a loopback port that never listens: connecting there is refused.

    The port stays taken while the socket is open, so nothing else can start listening on
    it meanwhile (a port merely found free could be taken by then). Close it when done.
    """
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    return held


def unreachable(conn: dict[str, Any], port: int) -> dict[str, Any]:
    """``conn`` with its kubeconfig's API server moved to loopback ``port``.

    With ``port`` from :func:`closed_port` every call of a scheduler made from it fails at
    once (connection refused).
    """
    bad = copy.deepcopy(conn)
    extra = bad["extra"]
    extra["kubeconfig"] = re.sub(
        r"https://127\.0\.0\.1:\d+", f"https://127.0.0.1:{port}", extra["kubeconfig"]
    )
    assert extra["kubeconfig"] != conn["extra"]["kubeconfig"], "no loopback API server to move"
    return bad


class Cluster:
    """What the stack's namespace holds: Jobs and pods by task, exec into a replica."""

    def __init__(self, namespace: str) -> None:
        from kubernetes import client, config

        self.namespace = namespace
        self.api = config.new_client_from_config(config_file=os.environ["KUBECONFIG"])
        self.core, self.batch = client.CoreV1Api(self.api), client.BatchV1Api(self.api)

    def create(self) -> None:
        """Creates the namespace."""
        from kubernetes import client

        meta = client.V1ObjectMeta(name=self.namespace)
        self.core.create_namespace(client.V1Namespace(metadata=meta))

    def _selector(self, dag_id: str, task_id: str = "", run_id: str = "") -> str:
        """The task-identity label selector; a run id keeps out other tests' runs of the DAG."""
        selector = f"{DAG_LABEL}={dag_id}"
        if task_id:
            selector += f",{TASK_LABEL}={task_id}"
        if run_id:
            selector += f",{RUN_LABEL}={label_value(run_id)}"
        return selector

    def jobs(self, dag_id: str, task_id: str, run_id: str) -> list[Any]:
        """The Jobs the task's apps created in the run (by the task-identity labels)."""
        found = self.batch.list_namespaced_job(
            self.namespace, label_selector=self._selector(dag_id, task_id, run_id)
        )
        return list(found.items)

    def apps(self, dag_id: str, task_id: str, run_id: str) -> set[str]:
        """The app ids (one per set of Jobs) the task created in the run."""
        return {j.metadata.labels[INSTANCE_LABEL] for j in self.jobs(dag_id, task_id, run_id)}

    def pods(self, dag_id: str, task_id: str, run_id: str) -> list[Any]:
        """The task's pods in the run (every pod of the run without ``task_id``)."""
        selector = self._selector(dag_id, task_id, run_id)
        return list(self.core.list_namespaced_pod(self.namespace, label_selector=selector).items)

    def pods_of_app(self, app_id: str) -> list[Any]:
        """The pods of one app."""
        selector = f"{INSTANCE_LABEL}={app_id}"
        return list(self.core.list_namespaced_pod(self.namespace, label_selector=selector).items)

    def running(self, dag_id: str, task_id: str, run_id: str, replicas: int) -> list[Any]:
        """The task's running pods in the run when there are ``replicas`` of them, else []."""
        pods = [p for p in self.pods(dag_id, task_id, run_id) if p.status.phase == "Running"]
        return pods if len(pods) == replicas else []

    def environ(self, pod: Any) -> dict[str, str]:
        """The environment of the replica's main process (its ``/proc/1/environ``)."""
        from kubernetes.stream import stream

        out = stream(
            self.core.connect_get_namespaced_pod_exec,
            pod.metadata.name,
            self.namespace,
            command=["cat", "/proc/1/environ"],
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
        )
        pairs = [item.partition("=") for item in out.split("\0") if item]
        return {k: v for k, _, v in pairs}

    def empty(self) -> None:
        """Deletes every Job and pod of the namespace and waits until they are gone."""
        for job in self.batch.list_namespaced_job(self.namespace).items:
            self.batch.delete_namespaced_job(
                job.metadata.name, self.namespace, propagation_policy="Background"
            )
        self.core.delete_collection_namespaced_pod(self.namespace, grace_period_seconds=0)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self.leftovers():
            time.sleep(1)

    def leftovers(self) -> list[str]:
        """The Jobs and pods still in the namespace."""
        names = [
            f"job/{j.metadata.name}" for j in self.batch.list_namespaced_job(self.namespace).items
        ]
        pods = self.core.list_namespaced_pod(self.namespace).items
        return names + [f"pod/{p.metadata.name}" for p in pods]

    def delete(self) -> None:
        """Deletes the namespace with everything in it, if it was made; closes the client."""
        from kubernetes.client.rest import ApiException

        try:
            self.core.read_namespace(self.namespace)
        except ApiException as e:
            if e.status != 404:
                raise
            self.api.close()
            return
        try:
            self.empty()
            self.core.delete_namespace(self.namespace)
        finally:
            self.api.close()


class CeleryStack:
    """One docker-compose project of docker-compose.celery.yml, on free loopback ports.

    Args:
        prefix: the compose project name's prefix (a unique suffix is added).
        settings: more variables of docker-compose.celery.yml (e.g. ``HEARTBEAT_TIMEOUT``).

    Attributes:
        service_env: more environment variables per service (set before :meth:`up`), given
            in a compose override file (``--file``; docker-compose merges ``environment``).
        service_volumes: more bind mounts per service (``HOST:CONTAINER:ro``), in that file too
            (e.g. a test-only hook folder, ``tests/_k8s_job_delay.py``).
    """

    def __init__(
        self, prefix: str = "txflow-celery", settings: dict[str, str] | None = None
    ) -> None:
        import docker

        suffix = uuid.uuid4().hex[:8]
        self.project = f"{prefix}-{suffix}"
        self.port = free_port()
        self.cluster = Cluster(f"tx-celery-{suffix}")
        # host directories the containers (uid 50000) and the pods read: world-readable
        self.dags = Path(tempfile.mkdtemp(prefix="txflow-celery-dags-"))
        self.workdir = Path(tempfile.mkdtemp(prefix="txflow-celery-work-"))
        self.env_file = self.dags.with_name(self.dags.name + ".env")
        self.override = self.dags.with_name(self.dags.name + ".override.yml")
        self.docker = docker.from_env(timeout=120)
        self.api: Api | None = None
        self.settings = dict(settings or {})
        self.service_env: dict[str, dict[str, str]] = {}
        self.service_volumes: dict[str, list[str]] = {}
        self.extra_dags: list[Path] = []
        self.image = ""  # another image for the Airflow services (e.g. an older build)
        self.pod_image = ""  # the pods' image (this venv on PATH), from the first connection()
        self._held = contextlib.ExitStack()

    def connection(self) -> dict[str, Any]:
        """The stack's ``torchx`` connection (``TORCHX_CONNECTION``)."""
        if not self.pod_image:  # loaded on first need, removed by down()
            self.pod_image = self._held.enter_context(loaded_venv_image())
        return connection(self.cluster.namespace, str(self.workdir), self.pod_image)

    # -- lifecycle ---------------------------------------------------------------------------

    def _write_inputs(self) -> None:
        for path in (
            REPO / "dags" / "torchx_training.py",
            REPO / "dags" / "torchx_celery.py",
            *self.extra_dags,
        ):
            shutil.copy(path, self.dags / path.name)
            (self.dags / path.name).chmod(0o644)
        self.dags.chmod(0o755)
        self.workdir.chmod(0o777)
        conn = self.connection()
        lines = {
            "AIRFLOW_PORT": str(self.port),
            "POSTGRES_PORT": str(free_port()),
            "REDIS_PORT": str(free_port()),
            "TORCHX_FLOW_DAGS": str(self.dags),
            "TORCHX_CONNECTION": json.dumps(conn),
            **self.settings,
        }
        self.env_file.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        self.env_file.chmod(0o600)
        # YAML accepts JSON; compose interpolates ``$`` in a file, not in an env file's values
        services: dict[str, dict[str, Any]] = {
            name: {"environment": {k: v.replace("$", "$$") for k, v in env.items()}}
            for name, env in self.service_env.items()
        }
        for name, volumes in self.service_volumes.items():
            services.setdefault(name, {})["volumes"] = volumes
        if self.image:
            for name in SERVICES:
                if name.startswith("airflow"):
                    services.setdefault(name, {})["image"] = self.image
        self.override.write_text(json.dumps({"services": services}))
        self.override.chmod(0o600)

    def _overridden(self) -> bool:
        return bool(self.service_env or self.service_volumes or self.image)

    def compose(self, *args: str, timeout: float = 600) -> None:
        """Runs ``docker-compose ARGS`` for this project; raises with its output on failure."""
        command = [
            "docker-compose",
            "--project-name",
            self.project,
            "--file",
            str(COMPOSE_FILE),
            *(("--file", str(self.override)) if self._overridden() else ()),
            "--env-file",
            str(self.env_file),
            *args,
        ]
        done = subprocess.run(
            command, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"docker-compose {' '.join(args)}: {done.stderr[-3000:]}")

    def up(self, dag_ids: tuple[str, ...]) -> Api:
        """Starts the stack, waits until it is healthy and has parsed ``dag_ids``."""
        self.cluster.create()
        self._write_inputs()
        self.compose("up", "-d")
        self.wait_healthy()
        self.api = Api(self.port)
        self.api.wait_parsed(dag_ids)
        return self.api

    def down(self) -> list[str]:
        """Removes the stack and the namespace; returns what is left of the project (nothing)."""
        try:
            if self.env_file.exists():  # else up() never got to start anything
                self.compose("down", "--volumes", "--remove-orphans", "--timeout", "5")
        finally:
            self.cluster.delete()
            self._held.close()
            shutil.rmtree(self.dags, ignore_errors=True)
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.env_file.unlink(missing_ok=True)
            self.override.unlink(missing_ok=True)
        return self.leftovers()

    # -- containers --------------------------------------------------------------------------

    def containers(self) -> dict[str, Any]:
        """The project's containers by service name."""
        filters = {"label": f"com.docker.compose.project={self.project}"}
        found = self.docker.containers.list(all=True, filters=filters)
        return {c.labels["com.docker.compose.service"]: c for c in found}

    def leftovers(self) -> list[str]:
        """Containers, networks and volumes of the project still on the engine."""
        filters = {"label": f"com.docker.compose.project={self.project}"}
        names = [c.name for c in self.docker.containers.list(all=True, filters=filters)]
        names += [n.name for n in self.docker.networks.list(filters=filters)]
        names += [v.name for v in self.docker.volumes.list(filters=filters)]
        return names

    def states(self) -> dict[str, str]:
        """Each service's health, else its status; ``exit N`` once its container ended."""
        states = {}
        for service, c in self.containers().items():
            c.reload()
            state = c.attrs["State"]
            if not state["Running"] and state["Status"] == "exited":
                states[service] = f"exit {state['ExitCode']}"
            else:
                states[service] = state.get("Health", {}).get("Status", state["Status"])
        return states

    def wait_healthy(self, timeout: float = 420) -> None:
        """Waits for airflow-init to exit 0 and every other service to be healthy.

        Raises:
            AssertionError: a service ended (airflow-init: with an error) or is not healthy in
                time, with each service's last log lines.
        """
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            states = self.states()
            ended = {s: v for s, v in states.items() if v.startswith("exit ")}
            if ended and ended != {"airflow-init": "exit 0"}:
                break
            if len(states) == len(SERVICES) and all(
                s in ("healthy", "exit 0") for s in states.values()
            ):
                return
            time.sleep(1)
        tails = {s: c.logs(tail=15).decode(errors="replace") for s, c in self.containers().items()}
        raise AssertionError(f"celery stack not healthy: {states}\n{tails}")

    def kill(self, service: str) -> None:
        """``docker kill`` (SIGKILL) of one service's container."""
        self.containers()[service].kill()

    def stop(self, service: str) -> None:
        """``docker stop`` of one service's container (SIGTERM: a Celery worker shuts down warm)."""
        self.containers()[service].stop(timeout=30)

    def start(self, service: str) -> None:
        """Starts a stopped service's container again."""
        self.containers()[service].start()

    def exec(self, service: str, argv: list[str]) -> tuple[int, str]:
        """Runs ``argv`` (no shell) in a service's container as its user; (exit code, output)."""
        code, out = self.containers()[service].exec_run(argv)
        return int(code), out.decode(errors="replace")

    def logs(self, service: str, tail: int = 60) -> str:
        """The last lines of a service's container log."""
        return str(self.containers()[service].logs(tail=tail).decode(errors="replace"))
