"""The rows of ``bench_launch.py`` beyond the CLI and API ones: DAG parse, Kubernetes, scripts.

* :func:`dag_parse`: ``dags/torchx_training.py`` parse time next to an empty DAG file (goal
  ``<= 2x empty``);
* :func:`cluster` (``--k8s``): starts the local cluster for the Kubernetes rows only, after the
  local ones (with the cluster, Slurm, the Docker engine and the registry running on the same
  two cores, the run row took 95.0 ms against 77.5 ms without them, 2026-11-30), and stops
  what it started;
* :func:`k8s_rows` (``--k8s``): on the current cluster (Kubernetes 1.35,
  ``tests/_infra.py k8s_cluster()``), ``torchx run -s kubernetes --wait utils.echo``
  in plain mode next to ``bench/_k8s_raw_job.py`` run as a fresh interpreter (imports the
  kubernetes client, creates a raw ``batch/v1`` Job running ``echo`` and polls it every 0.1 s
  until it is Complete), interleaved (goal ``<= raw + 0.3 s``);
* :func:`script_rows` (``--rows NAME``): the rows another bench script prints with ``--rows``.

Each row function calls ``add(label, found, goal, unit=1000, ref=None)`` of ``bench_launch``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
IMAGE = "torchx-flow/python:3.11"  # loaded in the cluster's containerd (used as present)

Variant = tuple[str, str, dict[str, str]]  # (column, python, env)
Add = Callable[..., None]
Measure = Callable[[list[str], dict[str, str], str], float]

EMPTY_DAG = """
from datetime import datetime
from airflow.sdk import DAG

with DAG("empty", schedule=None, start_date=datetime(2024, 1, 1)):
    pass
"""
PARSE = """
import runpy, sys, time
import airflow.sdk  # already paid by the DAG processor
t0, c0 = time.perf_counter(), time.process_time()
runpy.run_path(sys.argv[1])
print(time.perf_counter() - t0, time.process_time() - c0)
"""

ROW_SCRIPTS: dict[str, str] = {"airflow": "bench_airflow.py"}
"""Row name -> script in ``bench/`` whose ``--rows`` prints, as its last line, the JSON
``[[figure, value, goal], ...]``, optionally with a fourth item, the verdict; without it a
``<= Nx`` goal is checked against a value that starts with ``<number>x``
(:func:`ratio_verdict`)."""


def dag_parse(
    ours: list[Variant],
    home: str,
    add: Add,
    interleave: Callable[[list[Variant], Callable[[Variant], float]], dict[str, list[float]]],
    printed: Measure,
    cpu: list[float],
) -> None:
    """Parse rows: an empty DAG file, the training DAG (parse cache warm), and with no cache.

    The working directory (``""`` on ``sys.path``) is backdated so that the parse cache of
    ``dag_from_pipeline`` is not refused as racy, as for a DAG folder nobody is editing. The
    "no cache" row points ``TORCHX_HOME`` under a file, so every parse loads the pipeline.
    """
    empty = Path(home) / "empty_dag.py"
    empty.write_text(EMPTY_DAG)
    (Path(home) / "airflow").mkdir(exist_ok=True)
    stamp = time.time() - 60
    os.utime(home, (stamp, stamp))
    dag = str(REPO / "dags" / "torchx_training.py")
    cold = ours[0][2] | {"TORCHX_HOME": str(empty / "no-cache")}
    variants = [("empty DAG", ours[0][1], ours[0][2]), ("no cache", ours[0][1], cold), *ours]
    spent: dict[str, list[float]] = {v[0]: [] for v in variants}

    def one(v: Variant) -> float:
        took = printed([v[1], "-c", PARSE, str(empty) if v[0] == "empty DAG" else dag], v[2], home)
        spent[v[0]].append(cpu[-1])  # by column: the order of the columns rotates each round
        return took

    found = interleave(variants, one)
    times = {col: values[1:] for col, values in spent.items()}  # the first: interleave's warm-up
    col = ours[0][0]
    add("Airflow: parse an empty DAG file", {col: found["empty DAG"]}, "")
    add("- CPU time", {col: times["empty DAG"]}, "")
    add(
        "Airflow: parse dags/torchx_training.py (parse cache warm)",
        {v[0]: found[v[0]] for v in ours},
        "<= 2x empty",
        ref={col: found["empty DAG"]},
    )
    add("- CPU time", {v[0]: times[v[0]] for v in ours}, "")
    add("- same, no parse cache", {col: found["no cache"]}, "")
    add("- CPU time", {col: times["no cache"]}, "")


@contextlib.contextmanager
def cluster() -> Iterator[None]:
    """The Docker engine, the registry and the cluster, up for the block (``scripts/infra/up.sh``).

    Neither Slurm nor the compose and torch images the tests build (``TORCHX_FLOW_NO_SLURM``,
    ``TORCHX_FLOW_NO_BUILDS``): the rows need none of them.

    Its environment lines (``KUBECONFIG=...``) go to ``os.environ``; ``down.sh`` then stops
    what this call started (recorded in a file of its own) and leaves alone what was running.
    """
    infra = REPO / "scripts" / "infra"
    fd, started = tempfile.mkstemp(prefix="torchx-flow-started.")
    os.close(fd)
    env = dict(
        os.environ, TORCHX_FLOW_STARTED=started, TORCHX_FLOW_NO_SLURM="1", TORCHX_FLOW_NO_BUILDS="1"
    )
    try:
        up = subprocess.run([str(infra / "up.sh")], env=env, stdout=subprocess.PIPE, text=True)
        if up.returncode:
            sys.exit("bench_launch --k8s: scripts/infra/up.sh could not start the cluster")
        for line in up.stdout.splitlines():
            key, sep, value = line.partition("=")
            if sep and key.isidentifier():
                os.environ[key] = value
        yield
    finally:
        subprocess.run([str(infra / "down.sh")], env=env, stdout=subprocess.DEVNULL, check=False)
        with contextlib.suppress(FileNotFoundError):  # down.sh removes it
            os.unlink(started)


def k8s_setup() -> tuple[str, str]:
    """The current cluster's kubeconfig and the namespace the rows use; exits if unusable."""
    sys.path.insert(0, str(REPO / "tests"))
    from _infra import k8s_cluster  # lazy: tests/ joins sys.path with --k8s only

    kube, why = k8s_cluster()
    if kube is None:
        sys.exit(f"bench_launch --k8s: {why}")
    return kube, "default"


def k8s_cli_argv(ns: str) -> list[str]:
    """``torchx run --wait utils.echo`` in plain mode (the arguments after ``torchx``)."""
    cfg = f"mode=plain,namespace={ns},image_pull_policy=IfNotPresent"
    return ["run", "-s", "kubernetes", "--workspace", "", "-cfg", cfg, "--wait", "utils.echo"]


def k8s_rows(
    ours: list[Variant],
    kube: str,
    ns: str,
    home: str,
    add: Add,
    api: dict[str, list[float]],
    interleave: Callable[[list[Variant], Callable[[Variant], float]], dict[str, list[float]]],
    wall: Measure,
) -> None:
    """The Kubernetes rows (see the module docstring); the bench's Jobs are deleted at the end."""
    raw = ("raw", ours[0][1], ours[0][2])
    cli = [*k8s_cli_argv(ns), "--image", IMAGE]

    def one(v: Variant) -> float:
        env = dict(v[2], KUBECONFIG=kube)
        if v[0] == "raw":
            return wall([v[1], str(HERE / "_k8s_raw_job.py"), ns, IMAGE], env, home)
        return wall([str(Path(v[1]).with_name("torchx")), *cli], env, home)

    try:
        found = interleave([raw, *ours], one)
    finally:
        delete_jobs(kube, ns)
    col = ours[0][0]
    add("Kubernetes 1.35: raw batch/v1 Job script, create + poll 0.1 s", {col: found["raw"]}, "", 1)
    add(
        "Kubernetes 1.35: torchx run --wait utils.echo (plain mode)",
        {v[0]: found[v[0]] for v in ours},
        "<= raw + 0.3 s",
        1,
        ref={col: found["raw"]},
    )
    add("- API run + wait(0.1), warm process", api, "", 1)


def delete_jobs(kube: str, ns: str) -> None:
    """Deletes the bench's Jobs (raw ones and torchx apps) from ``ns``."""
    from kubernetes import client, config  # lazy: ~300 ms, with --k8s only

    batch = client.BatchV1Api(config.new_client_from_config(config_file=kube))
    for job in batch.list_namespaced_job(ns).items:
        name = job.metadata.name
        if name.startswith(("raw-echo-", "echo-")):
            batch.delete_namespaced_job(name, ns, propagation_policy="Background")


def script_rows(name: str, ncols: int) -> list[list[str]]:
    """The rows ``bench/ROW_SCRIPTS[name] --rows`` prints, padded to ``ncols`` value columns."""
    script = HERE / ROW_SCRIPTS[name]
    out = subprocess.run(
        [sys.executable, str(script), "--rows"], check=True, capture_output=True, text=True
    )
    rows = []
    for row in json.loads(out.stdout.strip().splitlines()[-1]):
        figure, value, goal = row[:3]
        met = row[3] if len(row) > 3 else ratio_verdict(goal, value)
        rows.append([figure, value, *["-"] * (ncols - 1), goal, met])
    return rows


def ratio_verdict(goal: str, value: str) -> str:
    """``met``/``NOT met`` (margin) for a ``<= Nx`` goal and a ``<number>x ...`` value, else ``""``.

    ``bench_airflow.py --rows`` prints e.g. ``["...", "1.12x (61 vs 54 ms)", "<= 1.2x"]``.
    """
    try:
        limit = float(goal.removeprefix("<=").strip().removesuffix("x"))
        found = float(value.split("x", 1)[0])
    except ValueError:
        return ""
    margin = 1 - found / limit
    return f"{'met' if margin >= 0 else 'NOT met'} ({margin:+.0%} margin)"
