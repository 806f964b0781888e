"""Kubernetes plain mode, local cluster: submit -> RUNNING / SUCCEEDED of 1 and 8 pods (a table).

Needs the cluster of ``scripts/infra/k8s-cluster.sh start`` (its kubeconfig is found the way the
tests find it). Rows: 1 and 8 pods (one role, N replicas of ``sh -c 'sleep 1'`` on the local image
``torchx-flow/python:3.11``), ``rank0_address=pod_ip`` (the local cluster has no DNS, so with
N > 1 rank 0's pod IP is awaited before the other Jobs are created). Times are the median over
``BENCH_REPEAT`` runs (default 3) of:

* submit -> RUNNING: ``Runner.schedule`` until ``describe`` first reports RUNNING (state polled
  every 50 ms);
* submit -> SUCCEEDED: the same start until SUCCEEDED (``sleep 1`` included);
* ``schedule`` alone (API calls, including the wait for rank 0's IP).

Each app is deleted after its run; the bench works in its own namespace and deletes it.

Run: ``.venv/bin/python bench/bench_kubernetes_live.py``.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _infra import k8s_cluster

from torchx.specs.api import AppDef, AppState, Resource, Role

REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
IMAGE = "torchx-flow/python:3.11"


def app(n: int) -> AppDef:
    role = Role(
        name="w",
        image=IMAGE,
        entrypoint="sh",
        args=["-c", "sleep 1"],
        num_replicas=n,
        resource=Resource(cpu=0.1, gpu=0, memMB=32),
    )
    return AppDef(name=f"bench{n}", roles=[role])


def one_run(sched: Any, n: int, ns: str) -> tuple[float, float, float]:
    cfg = {"mode": "plain", "namespace": ns, "rank0_address": "pod_ip", "validate_spec": False}
    info = sched.submit_dryrun(app(n), cfg)
    start = time.perf_counter()
    app_id = sched.schedule(info)
    scheduled = time.perf_counter() - start
    running = None
    try:
        while True:
            resp = sched.describe(app_id)
            state = resp.state if resp else AppState.UNKNOWN
            if running is None and state in (AppState.RUNNING, AppState.SUCCEEDED):
                running = time.perf_counter() - start
            if state == AppState.SUCCEEDED:
                return scheduled, running, time.perf_counter() - start
            if state in (AppState.FAILED, AppState.CANCELLED):
                raise RuntimeError(f"{app_id} ended {state}: {resp.msg if resp else ''}")
            time.sleep(0.05)
    finally:
        sched.delete(app_id)


def main() -> None:
    kubeconfig, why = k8s_cluster()
    if kubeconfig is None:
        sys.exit(f"bench_kubernetes_live: {why}")
    from kubernetes import client as k8s
    from kubernetes import config

    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    api = config.new_client_from_config(config_file=kubeconfig)
    core = k8s.CoreV1Api(api)
    ns = f"tx-bench-{uuid.uuid4().hex[:6]}"
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=ns)))
    sched = create_scheduler("bench", client=api)
    rows = []
    try:
        for n in (1, 8):
            one_run(sched, n, ns)  # warm-up
            runs = [one_run(sched, n, ns) for _ in range(REPEAT)]
            med = [statistics.median(r[i] for r in runs) for i in range(3)]
            rows.append([f"{n} pod(s)", f"{med[1]:.2f} s", f"{med[2]:.2f} s", f"{med[0]:.2f} s"])
    finally:
        core.delete_namespace(ns)
        api.close()
    print(
        tabulate(
            rows,
            headers=["plain mode", "submit->RUNNING", "submit->SUCCEEDED", "schedule"],
        )
    )
    print(f"(median of {REPEAT}; each pod runs `sleep 1`; rank0_address=pod_ip)")


if __name__ == "__main__":
    main()
