"""Plain and JobSet modes on the 1.35 cluster: TorchX beside a raw Job and JobSet; Kueue's cost.

For each case, two figures from the moment the objects are created (``schedule``, or the raw
create call): **all pods running** (every expected pod seen started: phase Running or
Succeeded) and **SUCCEEDED** (the app's ``describe``, or the raw object's ``Complete`` /
``Completed`` condition, seen). Everything is polled every 0.1 s from this process with one warm
client; the scheduler's dry-run (request building) happens before the clock starts.

Cases:

- ``utils.echo`` (busybox) in plain mode and in JobSet mode, each also with ``queue=<LocalQueue>``
  (Kueue: the app is created suspended and admitted; the difference is Kueue's admission
  overhead), beside a raw ``batch/v1`` Job and a raw JobSet (one replicated Job) running
  ``echo`` in the same image, created with the kubernetes client;
- ``dist.ddp -j 2x1`` of ``examples/train.py --steps 5`` in both modes: two pods, rank 0 by DNS
  (the headless Service), this venv's torch (``torchx-flow/python:3.11`` with the checkout and
  venv mounted; that image with the venv on ``PATH`` is loaded into the cluster for the run).

Rounds are interleaved; round 0 warms the node and is not counted; figures are medians. The
bench works in a namespace and a ClusterQueue of its own and deletes them.

Run: ``.venv/bin/python bench/bench_kubernetes_jobset.py [--rounds 3] [--no-ddp]``
(needs ``scripts/infra/k8s-current.sh start``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tabulate import tabulate

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from _infra import k8s_cluster  # noqa: E402

BUSYBOX = "torchx-flow/busybox:latest"
POLL = 0.1
JOBSET = ("jobset.x-k8s.io", "v1alpha2")
SMALL = {"cpu": "50m", "memory": "32Mi"}

Timing = tuple[float, float]
"""Seconds from create to all pods running, and to SUCCEEDED."""


def _started(pods: list[Any], expected: int) -> bool:
    phases = [p.status.phase for p in pods]
    return len(phases) >= expected and all(ph in ("Running", "Succeeded") for ph in phases)


def _clock(
    start: float, core: Any, ns: str, selector: str, expected: int, done: Callable[[], bool]
) -> Timing:
    """Polls pods (``selector``) and ``done()``; returns both seconds since ``start``."""
    running = None
    while True:
        now = time.perf_counter() - start
        if running is None:
            pods = core.list_namespaced_pod(ns, label_selector=selector).items
            if _started(pods, expected):
                running = now
        if done():
            return (running if running is not None else now), time.perf_counter() - start
        if now > 600:
            raise RuntimeError(f"{selector} did not finish in 600 s")
        time.sleep(POLL)


def run_torchx(sched: Any, core: Any, app: Any, cfg: dict[str, Any], expected: int) -> Timing:
    """Schedules ``app`` (dry-run before the clock) and times it; deletes it afterwards."""
    from torchx.specs.api import AppState, is_terminal

    info = sched.submit_dryrun(app, cfg)
    start = time.perf_counter()
    app_id = sched.schedule(info)
    name = app_id.split(":", 1)[1]
    seen: list[Any] = []

    def done() -> bool:
        desc = sched.describe(app_id)
        seen.append(desc)
        return desc is not None and is_terminal(desc.state)

    try:
        selector = f"app.kubernetes.io/instance={name}"
        timing = _clock(start, core, cfg["namespace"], selector, expected, done)
    finally:
        sched.delete(app_id)
    if seen[-1].state != AppState.SUCCEEDED:
        raise RuntimeError(f"{app_id} ended {seen[-1].state}: {seen[-1].msg}")
    return timing


def _pod_spec() -> dict[str, Any]:
    container = {
        "name": "echo",
        "image": BUSYBOX,
        "imagePullPolicy": "IfNotPresent",
        "command": ["echo", "hello"],
        "resources": {"requests": SMALL, "limits": SMALL},
    }
    return {"restartPolicy": "Never", "containers": [container]}


def _job_spec(label: str) -> dict[str, Any]:
    return {
        "backoffLimit": 0,
        "template": {"metadata": {"labels": {"bench": label}}, "spec": _pod_spec()},
    }


def run_raw_job(api: Any, ns: str, label: str) -> Timing:
    """A raw ``batch/v1`` Job running ``echo``: create -> pod started / ``Complete`` seen."""
    from kubernetes import client as k8s

    batch, core = k8s.BatchV1Api(api), k8s.CoreV1Api(api)
    body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": label}}
    body["spec"] = _job_spec(label)

    def done() -> bool:
        conds = batch.read_namespaced_job_status(label, ns).status.conditions or []
        return any(c.type == "Complete" and c.status == "True" for c in conds)

    start = time.perf_counter()
    batch.create_namespaced_job(ns, body)
    try:
        return _clock(start, core, ns, f"bench={label}", 1, done)
    finally:
        batch.delete_namespaced_job(label, ns, propagation_policy="Background")


def run_raw_jobset(api: Any, ns: str, label: str) -> Timing:
    """A raw JobSet (one replicated Job running ``echo``): create -> started / ``Completed``."""
    from kubernetes import client as k8s

    custom, core = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)
    body = {
        "apiVersion": "/".join(JOBSET),
        "kind": "JobSet",
        "metadata": {"name": label},
        "spec": {
            "replicatedJobs": [
                {"name": "echo", "replicas": 1, "template": {"spec": _job_spec(label)}}
            ]
        },
    }

    def done() -> bool:
        obj = custom.get_namespaced_custom_object(*JOBSET, ns, "jobsets", label)
        conds = (obj.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Completed" and c["status"] == "True" for c in conds)

    start = time.perf_counter()
    custom.create_namespaced_custom_object(*JOBSET, ns, "jobsets", body)
    try:
        return _clock(start, core, ns, f"bench={label}", 1, done)
    finally:
        custom.delete_namespaced_custom_object(
            *JOBSET, ns, "jobsets", label, propagation_policy="Background"
        )


# ------------------------------------------------------------------ the cases


def echo_app() -> Any:
    from torchx.components.utils import echo

    return echo(image=BUSYBOX)


def ddp_app(image: str, out: str) -> Any:
    from _k8s_live import mount_tokens

    from torchx.components.dist import ddp

    script = str(REPO / "examples" / "train.py")
    args = ["--steps", "5", "--output-dir", out]
    mounts = mount_tokens("type=bind", f"src={out}", f"dst={out}")
    return ddp(*args, script=script, j="2x1", cpu=1, memMB=4096, image=image, mounts=mounts)


def cases(
    api: Any, ns: str, queue: str, ddp_image: str, out: str
) -> dict[str, Callable[[int], Timing]]:
    """Each case's one run (its argument: the round, for unique raw object names)."""
    from kubernetes import client as k8s

    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    sched, core = create_scheduler("bench", client=api), k8s.CoreV1Api(api)
    base = {
        "namespace": ns,
        "image_pull_policy": "IfNotPresent",
        "reserved_millicpu": 950,
        "validate_spec": False,
    }

    def torchx_case(app: Callable[[], Any], expected: int, **cfg: Any) -> Callable[[int], Timing]:
        return lambda _: run_torchx(sched, core, app(), {**base, **cfg}, expected)

    found: dict[str, Callable[[int], Timing]] = {
        "utils.echo, plain": torchx_case(echo_app, 1, mode="plain"),
        "utils.echo, plain, Kueue queue": torchx_case(echo_app, 1, mode="plain", queue=queue),
        "utils.echo, jobset": torchx_case(echo_app, 1, mode="jobset"),
        "utils.echo, jobset, Kueue queue": torchx_case(echo_app, 1, mode="jobset", queue=queue),
        "raw batch/v1 Job (echo)": lambda r: run_raw_job(api, ns, f"raw-job-{r}"),
        "raw JobSet (echo)": lambda r: run_raw_jobset(api, ns, f"raw-jobset-{r}"),
    }
    if ddp_image:
        ddp = lambda: ddp_app(ddp_image, out)  # noqa: E731
        found["dist.ddp -j 2x1, plain"] = torchx_case(ddp, 2, mode="plain")
        found["dist.ddp -j 2x1, jobset"] = torchx_case(ddp, 2, mode="jobset")
    return found


def table(results: dict[str, list[Timing]], rounds: int) -> None:
    med = {
        name: (statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts))
        for name, ts in results.items()
    }
    rows = [[name, f"{r:.2f}", f"{d:.2f}"] for name, (r, d) in med.items()]
    for mode in ("plain", "jobset"):
        a, b = med[f"utils.echo, {mode}"], med[f"utils.echo, {mode}, Kueue queue"]
        rows.append(
            [f"Kueue admission overhead, {mode}", f"{b[0] - a[0]:+.2f}", f"{b[1] - a[1]:+.2f}"]
        )
    print(f"Kubernetes 1.35 (local), median of {rounds} interleaved rounds, seconds from create")
    print(tabulate(rows, headers=["case", "all pods running", "SUCCEEDED"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="counted rounds (after a warm one)")
    parser.add_argument("--no-ddp", action="store_true", help="leave out the dist.ddp cases")
    args = parser.parse_args()
    kubeconfig, why = k8s_cluster()
    if kubeconfig is None:
        sys.exit(f"bench_kubernetes_jobset: {why}")
    from contextlib import ExitStack

    from _k8s_current import loaded_venv_image, local_queue
    from _k8s_live import namespace
    from kubernetes import config

    api = config.new_client_from_config(config_file=kubeconfig)
    results: dict[str, list[Timing]] = {}
    with ExitStack() as stack:
        ns = stack.enter_context(namespace(api, "tx-bench-js"))
        queue = stack.enter_context(local_queue(api, ns, cpu="4", memory="16Gi"))
        image = "" if args.no_ddp else stack.enter_context(loaded_venv_image())
        out = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench_js_"))
        runs = cases(api, ns, queue, image, out)
        for i in range(args.rounds + 1):  # round 0 warms the node: not counted
            for name, run in runs.items():
                timing = run(i)
                if i:
                    results.setdefault(name, []).append(timing)
    api.close()
    table(results, args.rounds)


if __name__ == "__main__":
    main()
