"""Helpers of test_dags_celery_faults.py: run details, worker processes, replica environments.

No test in here. The worker-process helpers run a small Python program in a worker's
container (``docker exec`` as the container's user, the one the task processes run as).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import time
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from _airflow_rest import Api
from _celery_stack import WORKERS, CeleryStack, unreachable

T = TypeVar("T")

# a script the DDP replicas run (from the work directory every pod mounts): waits until the
# file argv[1] exists, saying so every 5 s; gives up after 15 minutes (a forgotten app ends)
WAIT_SCRIPT = """\
import os, sys, time

marker, rank = sys.argv[1], os.environ.get("RANK", "0")
deadline = time.monotonic() + 900
n = 0
while not os.path.exists(marker):
    if time.monotonic() > deadline:
        sys.exit(f"rank {rank}: no marker {marker} after 15 minutes")
    if n % 10 == 0:
        print(f"rank {rank}: waiting for {marker}", flush=True)
    n += 1
    time.sleep(0.5)
print(f"rank {rank}: marker found", flush=True)
"""

# finds the task process of a task instance try (Airflow's task runner sets its title to
# "airflow worker -- <ti id>"): prints "<pid> <parent pid>" per match
_FIND = """\
import os, sys
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\\0", b" ").decode()
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        continue
    if cmd.startswith("airflow worker -- " + sys.argv[1]) and stat.split(")")[-1].split()[0] != "Z":
        print(pid, stat.split(")")[-1].split()[1])
"""
_KILL = "import os, sys; os.kill(int(sys.argv[1]), int(sys.argv[2]))"

FORBIDDEN_NAMES = ("AIRFLOW_CONN_*", "AIRFLOW_VAR_*", "AIRFLOW__*", "CELERY_*")


def api_server_port() -> int:
    """The loopback port of the local cluster's API server (``$KUBECONFIG``'s server)."""
    with open(os.environ["KUBECONFIG"]) as f:
        found = re.search(r"https://127\.0\.0\.1:(\d+)", f.read())
    assert found, "no loopback API server in $KUBECONFIG"
    return int(found.group(1))


def through(conn: dict[str, Any], port: int) -> dict[str, Any]:
    """``conn`` reaching the API server through loopback ``port`` (e.g. a ``TcpProxy``)."""
    return unreachable(conn, port)


def until(
    api: Api, stack: CeleryStack, dag: str, run_id: str, found: Callable[[], T], interval: float
) -> T:
    """``found()`` once it is truthy, asked every ``interval`` s for at most 300 s.

    Not a timed assertion: the bound only stops a hung test, with the run's details.
    """
    deadline = time.monotonic() + 300
    while not (value := found()):
        assert time.monotonic() < deadline, failure(api, stack, dag, run_id)
        time.sleep(interval)
    return value


def task_instances(api: Api, dag_id: str, run_id: str) -> list[dict[str, Any]]:
    """Every task instance of a run (mapped ones each with its ``map_index``)."""
    quoted = urllib.parse.quote(run_id)
    found = api.call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{quoted}/taskInstances")
    return list(found["task_instances"])


def failure(api: Api, stack: CeleryStack, dag_id: str, run_id: str) -> str:
    """What to print when a run did not go as expected: task states and logs, service logs."""
    parts = []
    for ti in task_instances(api, dag_id, run_id):
        name = f"{ti['task_id']}[{ti['map_index']}]" if ti["map_index"] >= 0 else ti["task_id"]
        parts.append(f"--- {name}: {ti['state']} try {ti['try_number']} on {ti['hostname']}")
        if ti["map_index"] < 0:
            for n in range(1, int(ti["try_number"] or 0) + 1):
                log = api.log(dag_id, run_id, ti["task_id"], n)[-3000:]
                parts.append(f"[try {n}]\n{log}")
    for service in ("airflow-scheduler", *WORKERS, "airflow-triggerer"):
        parts.append(f"--- {service}\n" + stack.logs(service, 25))
    return "\n".join(parts)


def job_name(app_id: str) -> str:
    """The app's name (its Jobs' instance label) in a kubernetes app id ``namespace:name``."""
    return app_id.partition(":")[2]


def app_state(stack: CeleryStack, app: str) -> str:
    """The app's state as the scheduler reads it from the cluster (not Airflow's view)."""
    from torchx.runner import get_runner

    with get_runner() as runner:
        status = runner.status(f"kubernetes://torchx/{stack.cluster.namespace}:{app}")
    assert status is not None, app
    return status.state.name


# -- worker processes ----------------------------------------------------------------------------


def task_process(stack: CeleryStack, worker: str, ti_id: str) -> tuple[int, int]:
    """``(pid, parent pid)`` of a try's task process in ``worker``'s container.

    The parent is the try's supervisor (a Celery pool process): it heartbeats for the try.
    """
    code, out = stack.exec(worker, ["python", "-c", _FIND, ti_id])
    found = [tuple(int(n) for n in line.split()) for line in out.splitlines() if line.strip()]
    pids = {pid for pid, _ in found}
    # a process the task forked (e.g. a listener's) has the same title until it execs
    top = [(pid, parent) for pid, parent in found if parent not in pids]
    assert code == 0 and len(top) == 1, f"task process of {ti_id} on {worker}: {out}"
    return top[0]


def task_process_alive(stack: CeleryStack, worker: str, ti_id: str) -> bool:
    """Whether the try's task process still runs (not gone, not a zombie)."""
    code, out = stack.exec(worker, ["python", "-c", _FIND, ti_id])
    assert code == 0, out
    return bool(out.strip())


def signal_process(stack: CeleryStack, worker: str, pid: int, signum: int) -> None:
    """Sends ``signum`` to process ``pid`` of ``worker``'s container."""
    code, out = stack.exec(worker, ["python", "-c", _KILL, str(pid), str(signum)])
    assert code == 0, f"signal {signum} to {pid} on {worker}: {out}"


# -- environments -------------------------------------------------------------------------------


def leaked(env: dict[str, str] | None, secrets: Iterable[str]) -> list[str]:
    """The NAMES of the variables of ``env`` that hold a secret or have a forbidden name.

    Only names are returned (a failing test prints no secret value).
    """
    if env is None:
        return []
    bad = [k for k in env if any(fnmatch.fnmatchcase(k, p) for p in FORBIDDEN_NAMES)]
    values = tuple(secrets)
    bad += [k for k, v in env.items() if k not in bad and any(s in v for s in values)]
    return sorted(bad)


def read_worker_json(stack: CeleryStack, worker: str, path: str) -> dict[str, Any]:
    """A JSON file of a worker's container, removed once read."""
    code, out = stack.exec(worker, ["cat", path])
    stack.exec(worker, ["rm", "-f", path])
    assert code == 0, f"{path} on {worker}: {out[-500:]}"
    return dict(json.loads(out))
