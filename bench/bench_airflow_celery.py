"""Benchmarks of the Celery stack (docker-compose.celery.yml) on the local Kubernetes cluster.

Numbers only, nothing asserted. Starts the stack as tests/dags/test_dags_celery.py does (its
helpers: tests/_celery_stack.py), then measures:

1. ``utils.echo`` on Kubernetes as a task (DAG ``torchx_echo``: the duration Airflow records)
   vs a raw ``batch/v1`` Job running ``echo`` in the same image, created with the kubernetes
   client from a worker container (the same kubeconfig, from the ``torchx`` connection), from
   create to Complete (goal: task <= 1.1x raw);
2. the time from ``docker kill`` of the worker running ``train`` to its retry running on the
   other worker and to the retry's log saying it took the app over (the stack's default
   ``HEARTBEAT_TIMEOUT`` of 30 s dominates);
3. the Celery worker slots held while 4 deferred apps run (``torchx_sleep_deferred``; goal 0).

Needs DOCKER_HOST and KUBECONFIG (``set -a; . /tmp/infra.env``, or scripts/infra/up.sh)::

    python bench/bench_airflow_celery.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from _airflow_rest import Api  # noqa: E402
from _celery_stack import POD_IMAGE, WORKERS, CeleryStack, build_images  # noqa: E402

DAGS = ("torchx_echo", "torchx_train", "torchx_sleep_deferred")

RAW_JOB = """
import json, os, sys, time, uuid
import yaml
from kubernetes import client, config
extra = json.loads(os.environ["AIRFLOW_CONN_TORCHX_DEFAULT"])["extra"]
api = config.new_client_from_config_dict(yaml.safe_load(extra["kubeconfig"]))
batch = client.BatchV1Api(api)
ns, image, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
times = []
for _ in range(runs):
    name = "raw-echo-" + uuid.uuid4().hex[:8]
    container = client.V1Container(name="echo", image=image, command=["echo", "hello"])
    pod = client.V1PodSpec(containers=[container], restart_policy="Never")
    job = client.V1Job(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1JobSpec(template=client.V1PodTemplateSpec(spec=pod), backoff_limit=0),
    )
    t0 = time.monotonic()
    batch.create_namespaced_job(ns, job)
    while not (batch.read_namespaced_job_status(name, ns).status.succeeded or 0):
        time.sleep(1.0)
    times.append(time.monotonic() - t0)
    batch.delete_namespaced_job(name, ns, propagation_policy="Background")
print(json.dumps(times))
"""


def _seconds(ti: dict[str, Any]) -> float:
    start = datetime.fromisoformat(ti["start_date"])
    end = datetime.fromisoformat(ti["end_date"])
    return (end - start).total_seconds()


def echo_vs_raw_job(stack: CeleryStack, api: Api, runs: int) -> tuple[list[float], list[float]]:
    """Task durations of ``torchx_echo`` and create-to-Complete times of raw Jobs."""
    tasks = []
    for _ in range(runs):
        run_id = api.trigger("torchx_echo", {})
        state = api.wait_run("torchx_echo", run_id)
        if state != "success":
            raise RuntimeError(f"torchx_echo {run_id}: {state}")
        tasks.append(_seconds(api.tasks("torchx_echo", run_id)["echo"]))
    worker = stack.containers()[WORKERS[0]]
    code, out = worker.exec_run(
        ["python", "-c", RAW_JOB, stack.cluster.namespace, POD_IMAGE, str(runs)]
    )
    if code != 0:
        raise RuntimeError(out.decode(errors="replace")[-2000:])
    raw = json.loads(out.decode().strip().splitlines()[-1])
    return tasks, raw


def kill_to_reattach(stack: CeleryStack, api: Api) -> tuple[float, float]:
    """Seconds from killing the worker running ``train`` to its retry running, and re-attached."""
    dag = "torchx_train"
    run_id = api.trigger(
        dag, {"scheduler": "kubernetes", "workdir": str(stack.workdir), "steps": 20000}
    )
    api.wait_task(dag, run_id, "train", lambda t: t["state"] == "running" and t["hostname"])
    while len([p for p in stack.cluster.pods(dag, "train") if p.status.phase == "Running"]) < 2:
        time.sleep(0.5)
    worker = api.tasks(dag, run_id)["train"]["hostname"]
    killed = time.monotonic()
    stack.kill(worker)
    try:
        api.wait_task(
            dag, run_id, "train", lambda t: t["try_number"] == 2 and t["state"] == "running"
        )
        running = time.monotonic() - killed
        # "-> reattach": the app still ran; "-> reuse": it had SUCCEEDED before the retry
        while not any(w in api.log(dag, run_id, "train", 2) for w in ("-> reattach", "-> reuse")):
            if time.monotonic() - killed > 600:
                raise RuntimeError("the retry never took the app of the killed try over")
            time.sleep(0.5)
        reattached = time.monotonic() - killed
        api.wait_run(dag, run_id)
    finally:
        stack.start(worker)
        stack.wait_healthy()
    return running, reattached


def slots_while_deferred(stack: CeleryStack, api: Api, apps: int = 4) -> tuple[int, int]:
    """(most Celery tasks active, most task instances running) while ``apps`` apps are deferred."""
    dag = "torchx_sleep_deferred"
    runs = [api.trigger(dag, {"seconds": 60}) for _ in range(apps)]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        states = [api.tasks(dag, r).get("sleep", {}).get("state") for r in runs]
        if states.count("deferred") == apps:
            break
        time.sleep(1)
    active_max = running_max = 0
    for _ in range(5):
        active = 0
        for name in WORKERS:
            code, out = stack.containers()[name].exec_run(
                ["sh", "-c", 'celery -b "$CELERY_BROKER" inspect active -j -d "celery@$(hostname)"']
            )
            text = out.decode(errors="replace")
            start = text.find("{")
            if code == 0 and start >= 0:
                active += sum(len(v) for v in json.loads(text[start:]).values())
        states = [api.tasks(dag, r)["sleep"]["state"] for r in runs]
        active_max = max(active_max, active)
        running_max = max(running_max, states.count("running"))
        time.sleep(2)
    for r in runs:
        api.wait_run(dag, r)
    return active_max, running_max


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="echo tasks and raw Jobs")
    args = parser.parse_args()
    build_images()
    stack = CeleryStack("txflow-celery-bench")
    try:
        t0 = time.monotonic()
        api = stack.up(DAGS)
        print(f"stack up and DAGs parsed in {time.monotonic() - t0:.0f} s")
        tasks, raw = echo_vs_raw_job(stack, api, args.runs)
        running, reattached = kill_to_reattach(stack, api)
        active, ti_running = slots_while_deferred(stack, api)
    finally:
        left = stack.down()
    task_s, raw_s = statistics.median(tasks), statistics.median(raw)
    rows = [
        ("utils.echo task on kubernetes (median s)", f"{task_s:.1f}"),
        ("raw batch/v1 Job from a worker (median s)", f"{raw_s:.1f}"),
        ("task / raw Job (goal <= 1.1)", f"{task_s / raw_s:.2f}"),
        ("worker kill -> retry running (s)", f"{running:.0f}"),
        ("worker kill -> retry re-attached (s)", f"{reattached:.0f}"),
        ("Celery tasks active while 4 apps deferred (goal 0)", str(active)),
        ("task instances running while 4 apps deferred", str(ti_running)),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(
        f"echo task durations {[round(t, 1) for t in tasks]}, raw Jobs {[round(t, 1) for t in raw]}"
    )
    if left:
        print(f"left behind: {left}")


if __name__ == "__main__":
    main()
