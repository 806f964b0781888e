"""Benchmarks of the Celery stack (docker-compose.celery.yml) on the local Kubernetes cluster.

Numbers only, nothing asserted. Starts the stack as tests/dags/test_dags_celery.py does (its
helpers: tests/_celery_stack.py), then measures:

1. ``utils.echo`` on Kubernetes as a task (DAG ``torchx_echo``: the duration Airflow records)
   vs a raw ``batch/v1`` Job running ``echo`` in the same image, created with the kubernetes
   client from a worker container (the same kubeconfig, from the ``torchx`` connection), from
   create to Complete, polled every 0.1 s (goal: task <= 1.1x raw); and a ``BashOperator``
   ``echo`` task (DAG ``bash_echo``): Airflow's own cost of a task on this stack; and a raw
   Job with the pod template of the echo app's Job (TorchX's pod spec, no TorchX). The task's
   time is split with the stamps of its log and a watch on the namespace's pods
   (``_celery_timeline``): Airflow's start (task process, DAG parse) -> ``execute`` -> app
   submitted -> pod Succeeded -> the operator saw it end -> task end. Each round runs one of
   each kind, so a change of load on the machine hits them alike;
2. the Celery worker slots held while 4 deferred apps run (``torchx_sleep_deferred``; goal 0):
   sampled with ``celery inspect active`` from the moment all 4 tries are DEFERRED, counting
   the Celery tasks of that DAG only, at once and from 10 s later (steady state); and how long
   each deferring try kept its slot after it deferred (the worker's ``Workload finished`` line
   vs the task log's ``Pausing task as DEFERRED``); the same for 4 tasks deferring to Airflow's
   own ``TimeDeltaTrigger`` (DAG ``airflow_defer``: what Airflow itself costs);
3. the time from ``docker kill`` of the worker running ``train`` to its retry running on the
   other worker and to the retry's log saying it took the app over (the stack's default
   ``HEARTBEAT_TIMEOUT`` of 30 s dominates).

Needs DOCKER_HOST and KUBECONFIG (``set -a; . /tmp/infra.env``, or scripts/infra/up.sh)::

    python bench/bench_airflow_celery.py [--runs 3] [--logs]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from _airflow_rest import Api  # noqa: E402
from _celery_stack import INSTANCE_LABEL, WORKERS, CeleryStack, build_images  # noqa: E402
from _celery_timeline import (  # noqa: E402
    PodClock,
    celery_active,
    first_stamp,
    stamp,
    task_log,
    workload_finished,
)

DAGS = ("torchx_echo", "bash_echo", "torchx_train", "torchx_sleep_deferred", "airflow_defer")

RAW_JOB = """
import json, os, sys, time, uuid
import yaml
from kubernetes import client, config
extra = json.loads(os.environ["AIRFLOW_CONN_TORCHX_DEFAULT"])["extra"]
api = config.new_client_from_config_dict(yaml.safe_load(extra["kubeconfig"]))
batch = client.BatchV1Api(api)
ns, image, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
template = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None  # a pod template to copy
out = []
for _ in range(runs):
    name = "raw-echo-" + uuid.uuid4().hex[:8]
    if template is None:
        container = client.V1Container(name="echo", image=image, command=["echo", "hello"])
        pod = client.V1PodSpec(containers=[container], restart_policy="Never")
        job = client.V1Job(
            metadata=client.V1ObjectMeta(name=name),
            spec=client.V1JobSpec(template=client.V1PodTemplateSpec(spec=pod), backoff_limit=0),
        )
    else:
        spec = {"template": template, "backoffLimit": 0}
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec}
    t0, w0 = time.monotonic(), time.time()
    batch.create_namespaced_job(ns, job)
    while not (batch.read_namespaced_job_status(name, ns).status.succeeded or 0):
        time.sleep(0.1)
    out.append({"name": name, "created": w0, "seconds": time.monotonic() - t0})
    batch.delete_namespaced_job(name, ns, propagation_policy="Background")
print(json.dumps(out))
"""

# a deferring try's Celery task may outlive its defer by the supervisor's 5 s select timeout
# ([workers] min_heartbeat_interval) when its last socket closes before the process is reaped:
# the steady state starts past that
STEADY_AFTER = 10

# the segments of a TorchX task, from its log's stamps and the pod watch
SEGMENTS = (
    ("Airflow start -> execute (task process, DAG parse)", "start", "execute"),
    ("execute -> app submitted (ours)", "execute", "submitted"),
    ("app submitted -> pod Succeeded (cluster)", "submitted", "pod_done"),
    ("pod Succeeded -> operator saw it end (ours)", "pod_done", "seen"),
    ("operator saw the end -> task end (ours + Airflow)", "seen", "end"),
)


def _run_task(api: Api, dag: str, task: str) -> tuple[str, dict[str, Any]]:
    """Triggers ``dag``, waits for it to succeed; returns its run id and ``task``'s instance."""
    run_id = api.trigger(dag, {})
    state = api.wait_run(dag, run_id)
    if state != "success":
        raise RuntimeError(f"{dag} {run_id}: {state}")
    return run_id, api.tasks(dag, run_id)[task]


def _points(api: Api, dag: str, run_id: str, ti: dict[str, Any]) -> dict[str, Optional[float]]:
    """The wall times of a task's steps (None: not in its log)."""
    lines = task_log(api, dag, run_id, ti["task_id"])
    return {
        "start": stamp(ti["start_date"]),
        "execute": first_stamp(lines, r"^::endgroup::", after=r"::group::Pre Execute"),
        "submitted": first_stamp(lines, r"^launched TorchX app "),
        "seen": first_stamp(lines, r"^TorchX app \S+ SUCCEEDED"),
        "end": stamp(ti["end_date"]),
        "lines": lines,  # type: ignore[dict-item]
    }


def echo_tasks(api: Api, clock: PodClock, runs: int, show_logs: bool) -> list[dict[str, Any]]:
    """``runs`` ``torchx_echo`` tasks: their points, pod Succeeded included."""
    out = []
    for _ in range(runs):
        run_id, ti = _run_task(api, "torchx_echo", "echo")
        points = _points(api, "torchx_echo", run_id, ti)
        app = next((t for w, t in points["lines"] if w and "launched TorchX app" in t), "")
        name = app.rsplit(":", 1)[-1].strip()
        points["pod_done"] = clock.phase_time(INSTANCE_LABEL, name, "Succeeded")
        if show_logs:
            for when, text in points["lines"]:
                print(f"  {when or 0:.3f} {text[:150]}")
        out.append(points)
    return out


def bash_tasks(api: Api, runs: int) -> list[dict[str, Any]]:
    """``runs`` ``bash_echo`` tasks: their points."""
    return [_points(api, "bash_echo", *_run_task(api, "bash_echo", "echo")) for _ in range(runs)]


def echo_template(stack: CeleryStack) -> str:
    """The pod template of a ``torchx_echo`` app's Job as JSON, without labels (their own pods)."""
    job = stack.cluster.jobs("torchx_echo", "echo", "")[0]  # any run's
    template = stack.cluster.api.sanitize_for_serialization(job.spec.template)
    template["metadata"] = {}
    return json.dumps(template)


def raw_jobs(
    stack: CeleryStack, clock: PodClock, runs: int, template: str = ""
) -> list[dict[str, Any]]:
    """``runs`` raw Jobs from a worker: create -> Complete seen, and create -> pod Succeeded.

    Args:
        template: a pod template (JSON) for the Jobs; "": a bare ``echo`` container.
    """
    worker = stack.containers()[WORKERS[0]]
    argv = ["python", "-c", RAW_JOB, stack.cluster.namespace, stack.pod_image, str(runs)]
    code, out = worker.exec_run(argv + ([template] if template else []))
    if code != 0:
        raise RuntimeError(out.decode(errors="replace")[-2000:])
    jobs = json.loads(out.decode().strip().splitlines()[-1])
    for job in jobs:
        done = clock.phase_time("job-name", job["name"], "Succeeded")
        job["pod_done"] = done - job["created"] if done is not None else None
    return jobs


def _median(values: list[Optional[float]]) -> Optional[float]:
    found = [v for v in values if v is not None]
    return statistics.median(found) if found else None


def _span(points: list[dict[str, Any]], a: str, b: str) -> Optional[float]:
    spans = [p[b] - p[a] for p in points if p.get(a) is not None and p.get(b) is not None]
    return _median(spans)


def kill_to_reattach(stack: CeleryStack, api: Api) -> tuple[float, float]:
    """Seconds from killing the worker running ``train`` to its retry running, and re-attached."""
    dag = "torchx_train"
    run_id = api.trigger(
        dag, {"scheduler": "kubernetes", "workdir": str(stack.workdir), "steps": 20000}
    )
    api.wait_task(dag, run_id, "train", lambda t: t["state"] == "running" and t["hostname"])
    while not stack.cluster.running(dag, "train", run_id, 2):
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


def _deferred_at(api: Api, dag: str, runs: list[str], timeout: float = 300) -> float:
    """Waits until the ``sleep`` task of every run is DEFERRED; returns that wall time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = [api.tasks(dag, r).get("sleep", {}).get("state") for r in runs]
        if states.count("deferred") == len(runs):
            return time.time()
        if any(s in ("success", "failed") for s in states):
            raise RuntimeError(f"{dag}: a task ended before all deferred: {states}")
        time.sleep(0.3)
    raise RuntimeError(f"{dag}: not every task deferred within {timeout:.0f} s")


def slots_while_deferred(
    stack: CeleryStack, api: Api, dag: str, apps: int = 4, seconds: int = 40
) -> dict[str, Any]:
    """Celery slots held by ``dag``'s tasks while ``apps`` of them are deferred.

    Returns:
        ``at_once``: the Celery tasks of ``dag`` active in the first sample after every try
        was DEFERRED; ``steady``: the most in the samples from :data:`STEADY_AFTER` s later
        on; ``others``: the
        DAGs of the other Celery tasks seen; ``release``: per try, the seconds from its log's
        ``Pausing task as DEFERRED`` to its worker's ``Workload finished``.
    """
    since = time.time() - 5
    runs = [api.trigger(dag, {"seconds": seconds}) for _ in range(apps)]
    all_deferred = _deferred_at(api, dag, runs)
    at_once, steady, others = -1, 0, set[str]()
    while time.time() < all_deferred + seconds - 15:
        active = []
        for name in WORKERS:
            active += celery_active(stack.containers()[name]) or []
        mine = sum(1 for a in active if a["dag_id"] == dag)
        others.update(str(a["dag_id"]) for a in active if a["dag_id"] != dag)
        if at_once < 0:
            at_once = mine
        elif time.time() >= all_deferred + STEADY_AFTER:
            steady = max(steady, mine)
        time.sleep(1)
    finished: dict[str, tuple[float, str]] = {}
    for name in WORKERS:
        finished.update(workload_finished(stack.containers()[name], since))
    release = []
    for r in runs:
        ti = api.tasks(dag, r)["sleep"]
        paused = first_stamp(task_log(api, dag, r, "sleep"), r"^Pausing task as DEFERRED")
        done = finished.get(ti["id"])
        if paused is not None and done is not None and done[1] == "deferred":
            release.append(done[0] - paused)
    for r in runs:
        api.wait_run(dag, r)
    return {"at_once": at_once, "steady": steady, "others": others, "release": release}


def _fmt(value: Optional[float], digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _echo_rows(torchx: list, bash: list, raw: list, same: list) -> list[tuple[str, str]]:
    task_s = _span(torchx, "start", "end")
    bash_s = _span(bash, "start", "end")
    raw_s = _median([j["seconds"] for j in raw])
    same_s = _median([j["seconds"] for j in same])
    rows = [("utils.echo task on kubernetes (median s)", _fmt(task_s))]
    rows += [(f"  {name}", _fmt(_span(torchx, a, b))) for name, a, b in SEGMENTS]
    rows += [
        ("BashOperator echo task (median s)", _fmt(bash_s)),
        ("  Airflow start -> execute", _fmt(_span(bash, "start", "execute"))),
        ("  execute -> task end", _fmt(_span(bash, "execute", "end"))),
        ("raw batch/v1 Job from a worker, create -> Complete seen (median s)", _fmt(raw_s)),
        ("  create -> pod Succeeded", _fmt(_median([j["pod_done"] for j in raw]))),
        ("raw Job with the echo app's pod template, create -> Complete seen", _fmt(same_s)),
        ("  create -> pod Succeeded", _fmt(_median([j["pod_done"] for j in same]))),
    ]
    if task_s and raw_s and bash_s:
        rows += [
            ("task / raw Job (goal <= 1.1)", _fmt(task_s / raw_s)),
            ("BashOperator task / raw Job (Airflow alone)", _fmt(bash_s / raw_s)),
            (
                "(task - BashOperator task) / raw Job (ours + cluster)",
                _fmt((task_s - bash_s) / raw_s),
            ),
        ]
    return rows


def _slot_rows(label: str, slots: dict[str, Any]) -> list[tuple[str, str]]:
    release = slots["release"]
    return [
        (f"{label}: Celery tasks active when all 4 DEFERRED", str(slots["at_once"])),
        (
            f"{label}: Celery tasks active from {STEADY_AFTER} s later (goal 0)",
            str(slots["steady"]),
        ),
        (
            f"{label}: slot kept after the defer, s (each try)",
            " ".join(f"{r:.1f}" for r in sorted(release)) or "-",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds of echo tasks and raw Jobs")
    parser.add_argument("--logs", action="store_true", help="print the echo tasks' logs")
    args = parser.parse_args()
    build_images()
    stack = CeleryStack("txflow-celery-bench")
    try:
        t0 = time.monotonic()
        api = stack.up(DAGS)
        print(f"stack up and DAGs parsed in {time.monotonic() - t0:.0f} s")
        _run_task(api, "bash_echo", "echo")  # each worker's first task parses the DAG folder
        torchx, bash, raw, same = [], [], [], []
        with PodClock(stack.cluster.core, stack.cluster.namespace) as clock:
            for _ in range(args.runs):  # interleaved: a change of load hits every kind alike
                torchx += echo_tasks(api, clock, 1, args.logs)
                bash += bash_tasks(api, 1)
                raw += raw_jobs(stack, clock, 1)
                same += raw_jobs(stack, clock, 1, echo_template(stack))
        ours = slots_while_deferred(stack, api, "torchx_sleep_deferred")
        airflow = slots_while_deferred(stack, api, "airflow_defer")
        running, reattached = kill_to_reattach(stack, api)
    finally:
        left = stack.down()
    rows = _echo_rows(torchx, bash, raw, same)
    rows += _slot_rows("torchx_sleep_deferred", ours)
    rows += _slot_rows("airflow_defer (Airflow's TimeDeltaTrigger)", airflow)
    rows += [
        ("worker kill -> retry running (s)", f"{running:.0f}"),
        ("worker kill -> retry re-attached (s)", f"{reattached:.0f}"),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(f"echo tasks (s): {[_fmt(p['end'] - p['start'], 1) for p in torchx]}")
    seen = [_fmt(p["seen"] - p["pod_done"]) for p in torchx if p["seen"] and p["pod_done"]]
    print(f"  pod Succeeded -> operator saw it end (s): {seen}")
    print(f"bash tasks (s): {[_fmt(p['end'] - p['start'], 1) for p in bash]}")
    print(f"raw Jobs (s):   {[_fmt(j['seconds'], 1) for j in raw]}")
    print(f"  same template: {[_fmt(j['seconds'], 1) for j in same]}")
    if ours["others"] or airflow["others"]:
        print(f"Celery tasks of other DAGs seen: {sorted(ours['others'] | airflow['others'])}")
    if left:
        print(f"left behind: {left}")


if __name__ == "__main__":
    main()
