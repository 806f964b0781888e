"""Kubernetes plain mode on a local cluster: the CLI beside a raw Job, and 1 / 8 pod apps.

Default table (issue 29): ``torchx run -s kubernetes --wait utils.echo`` (a fresh ``torchx``
process, ``mode=plain``, the local busybox image used as present) beside a raw ``batch/v1``
Job running ``echo`` in the same image, created with the kubernetes client and polled every
0.1 s until its ``Complete`` condition (``bench/_k8s_raw_job.py``): once from this process
(a warm client: create -> Complete), once as a fresh interpreter like the CLI (process start
-> exit), and once more from this process with the Job the CLI creates (its pod spec: the
``/dev/shm`` memory volume, resources, hostname), which tells the pod's cost from the CLI's.
Rounds are interleaved; figures are medians. A second table says where the CLI's time goes,
from the same runs under ``bench/_k8s_cli_trace.py`` (timestamps of the kubernetes import,
the kubeconfig load and every API request: nothing of the CLI changes).

``--pods``: the older table, submit -> RUNNING / SUCCEEDED of 1 and 8 pods (one role, N
replicas of ``sh -c 'sleep 1'`` on ``torchx-flow/python:3.11``, ``rank0_address=pod_ip``, as
first measured on a 1.20 cluster without DNS), through ``Runner``-free ``schedule`` and
``describe`` polled every 50 ms, plus ``schedule`` alone.

It runs on the local cluster of ``scripts/infra/k8s-current.sh`` (1.35), the one issue 29's row
is measured on, in its own namespace, which it deletes.

Run: ``.venv/bin/python bench/bench_kubernetes_live.py [--rounds 7] [--pods]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _infra import k8s_cluster
from _k8s_raw_job import run_job

from torchx.specs.api import AppDef, AppState, Resource, Role

HERE = Path(__file__).resolve().parent
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
IMAGE = "torchx-flow/python:3.11"
BUSYBOX = "torchx-flow/busybox:latest"
TORCHX = str(Path(sys.executable).with_name("torchx"))


# ------------------------------------------------------------------ the CLI beside a raw Job


def cli_argv(ns: str) -> list[str]:
    """``torchx run --wait utils.echo`` in plain mode (after ``torchx`` or the trace script)."""
    cfg = f"mode=plain,namespace={ns},image_pull_policy=IfNotPresent"
    return ["run", "-s", "kubernetes", "--workspace", "", "--wait", "-cfg", cfg]


def run_cli(ns: str, env: dict[str, str], cwd: str, trace: str = "") -> float:
    """Wall seconds of one CLI run (a fresh process); with ``trace``, under the trace script."""
    prefix = [sys.executable, str(HERE / "_k8s_cli_trace.py"), trace] if trace else [TORCHX]
    argv = [*prefix, *cli_argv(ns), "utils.echo", "--image", BUSYBOX]
    start = time.time()
    out = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.time() - start
    if out.returncode != 0 or "SUCCEEDED" not in out.stderr:
        raise RuntimeError(f"torchx run failed ({out.returncode}): {out.stderr[-2000:]}")
    if trace:
        with open(trace) as f:
            events = json.load(f)
        events["spawn"], events["exit"] = start, start + wall
        with open(trace, "w") as f:
            json.dump(events, f)
    return wall


def run_raw_process(ns: str, env: dict[str, str], cwd: str) -> tuple[float, dict[str, Any]]:
    """Wall seconds of the raw Job as a fresh interpreter, and what it printed."""
    start = time.time()
    out = subprocess.run(
        [sys.executable, str(HERE / "_k8s_raw_job.py"), ns, BUSYBOX],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return time.time() - start, json.loads(out.stdout.strip().splitlines()[-1])


def phases(ev: dict[str, Any]) -> dict[str, float]:
    """Where one traced CLI run's time went (seconds); see the module docstring."""
    reqs = ev["requests"]
    dry = [r for r in reqs if r[4] == "dryrun"]
    creates = [r for r in reqs if r[2] == "POST" and r[4] != "dryrun"]
    k8s_start, k8s_end = ev["k8s"]
    cfg_start, cfg_end = ev["config"][0] if ev["config"] else (k8s_end, k8s_end)
    submitted = creates[-1][1]
    return {
        "interpreter start": ev["main"] - ev["spawn"],
        "torchx imports, CLI, component": k8s_start - ev["main"],
        "kubernetes client import": k8s_end - k8s_start,
        "kubeconfig load": cfg_end - cfg_start,
        "other work before the first request": reqs[0][0] - k8s_end - (cfg_end - cfg_start),
        "validation dry runs (dryRun=All)": dry[-1][1] - dry[0][0] if dry else 0.0,
        "create (Service, Job)": submitted - creates[0][0],
        "created -> SUCCEEDED seen (watch, reads)": reqs[-1][1] - submitted,
        "exit": ev["exit"] - reqs[-1][1],
    }


def counts(ev: dict[str, Any]) -> dict[str, int]:
    """API requests of one traced run, by kind."""
    reqs = ev["requests"]
    return {
        "dry-run POSTs": sum(r[4] == "dryrun" for r in reqs),
        "create POSTs": sum(r[2] == "POST" and r[4] != "dryrun" for r in reqs),
        "watches": sum(r[4] == "watch" for r in reqs),
        "other reads (describe, mode probes)": sum(r[2] == "GET" and r[4] != "watch" for r in reqs),
    }


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def cli_table(kubeconfig: str, label: str, rounds: int) -> None:
    """The issue 29 row and the phase table (see the module docstring)."""
    from kubernetes import config

    api = config.new_client_from_config(config_file=kubeconfig)
    with tempfile.TemporaryDirectory(prefix="bench_k8s_") as tmp, namespace(api) as ns:
        env = {**os.environ, "KUBECONFIG": kubeconfig, "TORCHX_HOME": f"{tmp}/home"}
        kinds = ("cli", "traced", "raw", "pod", "raw_p", "same")
        t: dict[str, list[float]] = {k: [] for k in kinds}
        traces = []
        for i in range(rounds + 1):  # round 0 warms the node (image, caches): not counted
            cli = run_cli(ns, env, tmp)
            trace = f"{tmp}/trace{i}.json"
            traced = run_cli(ns, env, tmp, trace)
            raw = run_job(api, ns, BUSYBOX)
            raw_p, _ = run_raw_process(ns, env, tmp)
            same = run_job(api, ns, BUSYBOX, same_pod=True)
            if i:
                t["same"].append(same["done"])
                t["cli"].append(cli)
                t["traced"].append(traced)
                t["raw"].append(raw["done"])
                t["pod"].append(raw["pod"])
                t["raw_p"].append(raw_p)
                with open(trace) as f:
                    traces.append(json.load(f))
    api.close()
    med = {k: _median(v) for k, v in t.items()}
    mean = {k: statistics.mean(v) for k, v in t.items()}

    def row(text: str, key: str, minus: str = "") -> list[str]:
        if minus:
            return [text, f"{med[key] - med[minus]:+.2f} s", f"{mean[key] - mean[minus]:+.2f} s"]
        return [text, f"{med[key]:.2f} s", f"{mean[key]:.2f} s"]

    rows = [
        row("torchx run -s kubernetes --wait utils.echo (process)", "cli"),
        row("- the same under the trace script", "traced"),
        row("raw Job, warm client: create -> Complete seen", "raw"),
        row("- create -> pod Succeeded seen", "pod"),
        row("raw Job script (process: imports, config, create -> Complete)", "raw_p"),
        row("raw Job with the CLI's pod spec, warm: create -> Complete", "same"),
        row("CLI - raw Job, warm client (goal <= 0.3 s)", "cli", "raw"),
        row("CLI - raw Job script", "cli", "raw_p"),
        row("CLI - raw Job with the CLI's pod spec", "cli", "same"),
    ]
    print(f"Kubernetes {label}, plain mode, median of {rounds} interleaved rounds")
    print(tabulate(rows, headers=["", "median", "mean"]))
    print()
    spent = {k: _median([phases(e)[k] for e in traces]) for k in phases(traces[0])}
    made = {k: _median([counts(e)[k] for e in traces]) for k in counts(traces[0])}
    print(f"Where the CLI's time goes (median of {rounds} traced runs)")
    print(tabulate([[k, f"{v * 1000:.0f} ms"] for k, v in spent.items()], headers=["", ""]))
    print(tabulate([[k, f"{v:g}"] for k, v in made.items()], headers=["API requests", ""]))


# ------------------------------------------------------------------ 1 and 8 pods


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


def pods_table(kubeconfig: str) -> None:
    """The 1 and 8 pod table (``--pods``)."""
    from kubernetes import config

    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    api = config.new_client_from_config(config_file=kubeconfig)
    sched = create_scheduler("bench", client=api)
    rows = []
    with namespace(api) as ns:
        for n in (1, 8):
            one_run(sched, n, ns)  # warm-up
            runs = [one_run(sched, n, ns) for _ in range(REPEAT)]
            med = [statistics.median(r[i] for r in runs) for i in range(3)]
            rows.append([f"{n} pod(s)", f"{med[1]:.2f} s", f"{med[2]:.2f} s", f"{med[0]:.2f} s"])
    api.close()
    print(
        tabulate(
            rows,
            headers=["plain mode", "submit->RUNNING", "submit->SUCCEEDED", "schedule"],
        )
    )
    print(f"(median of {REPEAT}; each pod runs `sleep 1`; rank0_address=pod_ip)")


# ------------------------------------------------------------------ main


@contextmanager
def namespace(api: Any) -> Iterator[str]:
    """A namespace of the bench's own, deleted (with everything in it) at the end."""
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(api)
    ns = f"tx-bench-{uuid.uuid4().hex[:6]}"
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=ns)))
    try:
        yield ns
    finally:
        core.delete_namespace(ns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (CLI table)")
    parser.add_argument("--pods", action="store_true", help="the 1 and 8 pod table instead")
    args = parser.parse_args()
    kubeconfig, why = k8s_cluster()
    if kubeconfig is None:
        sys.exit(f"bench_kubernetes_live: {why}")
    if args.pods:
        pods_table(kubeconfig)
    else:
        cli_table(kubeconfig, "1.35", args.rounds)


if __name__ == "__main__":
    main()
