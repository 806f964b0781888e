"""Benchmarks of the Airflow adapter (numbers only; nothing here asserts a speed).

1. Task overhead: a DAG with N ``TorchXOperator`` tasks running ``utils.echo`` (local_cwd) and N
   ``BashOperator`` tasks running ``echo``, run with ``dag.test()`` on SQLite; compares the task
   durations Airflow records (issue 19: no slower than 1.56x Bash; issue 29 goal <= 1.2x), the
   medians over ``--rounds`` DAG runs (each run's first task of a kind pays that kind's imports
   and Airflow's API server start, so it is left out). A third kind,
   ``TorchXOperator`` with ``durable=False, torchx_conn_id=None``, skips the connection read, an
   Airflow API round trip that BashOperator does not make; its supervisor, prestarted as the
   fields render, then has less time to start before the launch. (``utils.echo`` ends within
   50 ms, so no kind writes the task state store.) A fourth kind, ``BashOperator`` with a
   ``pre_execute`` that reads the ``torchx_default`` connection (absent here, as for the
   operator), times that read on its own: the floor the default operator's ratio cannot go
   below.
2. Parse cost: the import time of each file in dags/ next to an empty DAG file, in a fresh
   interpreter that has already imported ``airflow.sdk``.

    python bench/bench_airflow.py [--tasks 5] [--rounds 3] [--rows | --phases]

``--phases`` times, in the ``dag.test()`` process, what each kind's tasks spend where (Airflow's
API calls, rendering, the connection read, launch, follow; medians per task, first task left
out): where the operator's time goes next to BashOperator's.

``--rows`` runs only the task overhead and prints, as its last stdout line, the JSON rows
``bench_launch.py --rows airflow`` adds to the issue-29 table: ``[[figure, value, goal], ...]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any, Optional

REPO = Path(__file__).resolve().parents[1]

BENCH_DAG = """
from datetime import datetime
from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG, chain
from torchx_airflow import TorchXOperator
from torchx_airflow.version_compat import AirflowNotFoundException, BaseHook


def read_torchx_default(context):  # what the operator's default connection read costs
    try:
        BaseHook.get_connection("torchx_default")
    except AirflowNotFoundException:
        pass


with DAG("bench_airflow", schedule=None, start_date=datetime(2024, 1, 1)):
    tasks = []
    for i in range({n}):
        tasks.append(BashOperator(task_id=f"bash_{{i}}", bash_command="echo hello"))
        tasks.append(TorchXOperator(task_id=f"torchx_{{i}}", component="utils.echo",
                                    component_args=["--msg", "hello"]))
        tasks.append(TorchXOperator(task_id=f"lean_{{i}}", component="utils.echo",
                                    component_args=["--msg", "hello"], durable=False,
                                    torchx_conn_id=None))
        tasks.append(BashOperator(task_id=f"bashconn_{{i}}", bash_command="echo hello",
                                  pre_execute=read_torchx_default))
    chain(*tasks)
"""

EMPTY_DAG = """
from datetime import datetime
from airflow.sdk import DAG

with DAG("empty", schedule=None, start_date=datetime(2024, 1, 1)):
    pass
"""

IMPORT_TIME = """
import runpy, sys, time
import airflow.sdk  # already paid by the DAG processor
t0 = time.perf_counter()
runpy.run_path(sys.argv[1])
print(time.perf_counter() - t0)
"""


_SDK = "airflow.sdk.execution_time"
_OP = "torchx_airflow.operators.torchx:TorchXOperator"
PHASES = {
    "API: start": "airflow.sdk.api.client:TaskInstanceOperations.start",
    "render fields": f"{_SDK}.task_runner:RuntimeTaskInstance.render_templates",
    "  prestart supervisor": f"{_OP}._prestart",
    "  connection read": f"{_OP}._read_connection",
    "API: rendered fields": "airflow.sdk.api.client:TaskInstanceOperations.set_rtif",
    "execute": f"{_SDK}.task_runner:_execute_task",
    "  find or launch": "torchx_airflow._manager:AppManager.find_or_launch",
    "  follow to the end": "torchx_airflow._manager:AppManager.follow",
    "  finish": "torchx_airflow._manager:AppManager.finish",
    "API: XCom return_value": "airflow.sdk.api.client:XComOperations.set",
    "API: succeed": "airflow.sdk.api.client:TaskInstanceOperations.succeed",
}
"""Phase -> ``module:qualname`` timed in the ``dag.test()`` process (``--phases``)."""


def _time_phases(times: dict[str, dict[str, list[float]]]) -> None:
    """Wraps each of :data:`PHASES`: its durations go to ``times[kind][phase]``."""
    import importlib

    from airflow.sdk.execution_time import supervisor

    kind: list[str] = [""]
    run = supervisor.run_task_in_process

    def in_task(ti: Any, task: Any) -> Any:
        kind[0] = ti.task_id.rsplit("_", 1)[0] if not ti.task_id.endswith("_0") else ""
        return run(ti=ti, task=task)

    supervisor.run_task_in_process = in_task  # type: ignore[assignment]
    for phase, where in PHASES.items():
        module, _, qualname = where.partition(":")
        owner: Any = importlib.import_module(module)
        *path, name = qualname.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, name, _timed(getattr(owner, name), phase, kind, times))


def _timed(fn: Any, phase: str, kind: list[str], times: dict[str, dict[str, list[float]]]) -> Any:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            if kind[0]:
                times.setdefault(kind[0], {}).setdefault(phase, []).append(time.perf_counter() - t0)

    return timed


def _phases_child(dag: str) -> None:
    """In the ``dag.test()`` child: runs the DAG with :data:`PHASES` timed; prints JSON."""
    from torchx_airflow.local import run_dag_test

    times: dict[str, dict[str, list[float]]] = {}
    _time_phases(times)
    summary = run_dag_test(Path(dag), "bench_airflow")
    print(json.dumps({"tasks": summary["tasks"], "phases": times}, default=str), flush=True)


def run_tasks(
    tmp: Path, n: int, template: Path, phases: Optional[dict[str, dict[str, list[float]]]] = None
) -> dict[str, list[float]]:
    """One ``dag.test()`` run of the bench DAG: task durations by kind, in task order.

    ``template`` caches the migrated database (migrated once, copied for each run). With
    ``phases``, the run times :data:`PHASES` and adds their durations to it.
    """
    from torchx_airflow.local import dag_test_argv, prepare_home

    env = {**os.environ, **prepare_home(tmp / "airflow", template)}
    env["TORCHX_HOME"] = str(tmp / "torchx_home")
    env["PATH"] = f"{os.path.dirname(sys.executable)}:{env.get('PATH', '')}"
    dag = Path(env["AIRFLOW__CORE__DAGS_FOLDER"]) / "bench_airflow.py"
    dag.write_text(textwrap.dedent(BENCH_DAG.format(n=n)))
    argv = dag_test_argv(dag, "bench_airflow")
    if phases is not None:
        argv = [sys.executable, __file__, "--phases-child", str(dag)]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if phases is not None:
        for kind, found in result.get("phases", {}).items():
            for phase, values in found.items():
                phases.setdefault(kind, {}).setdefault(phase, []).extend(values)
    tasks = result["tasks"]
    by_kind: dict[str, list[float]] = {}
    for kind in KINDS:
        ids = [k for k in tasks if k.startswith(kind + "_")]
        ids.sort(key=lambda k: int(k.rsplit("_", 1)[1]))
        by_kind[kind] = [tasks[k]["duration"] for k in ids]
    return by_kind


KINDS = ("bash", "torchx", "lean", "bashconn")


ROW_FIGURE = "Airflow: TorchXOperator echo vs BashOperator, dag.test()"
ROW_GOAL = "<= 1.2x"


def bench_tasks(
    tmp: Path, n: int, rounds: int, phases: Optional[dict[str, dict[str, list[float]]]] = None
) -> dict[str, float]:
    """Prints the task durations of each kind; returns their medians (seconds)."""
    durations: dict[str, list[float]] = {kind: [] for kind in KINDS}
    firsts: dict[str, list[float]] = {kind: [] for kind in KINDS}
    print(f"load average before: {_load()}")
    for r in range(rounds):
        for kind, values in run_tasks(tmp / f"round{r}", n, tmp / "db", phases).items():
            firsts[kind].append(values[0])  # pays the imports (and Airflow's API server start)
            durations[kind] += values[1:]
    print(f"load average after: {_load()}")
    medians = {kind: statistics.median(v) for kind, v in durations.items()}
    for kind in KINDS:
        spread = sorted(round(d * 1000) for d in durations[kind])
        first = [round(d * 1000) for d in firsts[kind]]
        print(f"{kind:>7}: median {medians[kind] * 1000:.0f} ms  all (ms) {spread}  first {first}")
    bash = medians["bash"]
    print(
        "TorchXOperator / BashOperator (median task duration):"
        f" {medians['torchx'] / bash:.2f}x (goal <= 1.2x; issue 19 baseline 1.56x)"
    )
    print(
        "TorchXOperator(durable=False, torchx_conn_id=None) / BashOperator:"
        f" {medians['lean'] / bash:.2f}x (no connection read)"
    )
    print(
        "BashOperator reading the torchx_default connection / BashOperator:"
        f" {medians['bashconn'] / bash:.2f}x (the connection read alone)"
    )
    return medians


def print_phases(phases: dict[str, dict[str, list[float]]]) -> None:
    """Prints the median ms of each phase per kind (a phase a kind does not have: ``-``)."""
    print(f"{'phase (median ms per task)':<28}" + "".join(f"{k:>9}" for k in KINDS))
    for phase in PHASES:
        cells = []
        for kind in KINDS:
            values = phases.get(kind, {}).get(phase)
            cells.append(f"{statistics.median(values) * 1000:9.1f}" if values else f"{'-':>9}")
        print(f"{phase:<28}" + "".join(cells))


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def rows(medians: dict[str, float]) -> list[list[str]]:
    """The issue-29 table rows: ``[figure, value, goal]`` (value: ``<ratio>x (<ms> vs <ms>)``)."""
    bash = medians["bash"]

    def ratio(kind: str) -> str:
        return f"{medians[kind] / bash:.2f}x ({medians[kind] * 1000:.0f} vs {bash * 1000:.0f} ms)"

    return [
        [ROW_FIGURE, ratio("torchx"), ROW_GOAL],
        ["- same, torchx_conn_id=None (no connection read)", ratio("lean"), ""],
        ["- BashOperator + the torchx_default connection read", ratio("bashconn"), ""],
    ]


def import_time(path: Path, env: dict[str, str], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", IMPORT_TIME, str(path)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return min(times)


def bench_imports(tmp: Path) -> None:
    env = {**os.environ, "AIRFLOW_HOME": str(tmp / "airflow_imports")}
    empty = tmp / "empty_dag.py"
    empty.write_text(EMPTY_DAG)
    print(f"{'empty DAG':>24}: {import_time(empty, env) * 1000:7.1f} ms")
    for dag in sorted((REPO / "dags").glob("*.py")):
        print(f"{dag.name:>24}: {import_time(dag, env) * 1000:7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5, help="tasks of each kind per run")
    parser.add_argument("--rounds", type=int, default=3, help="dag.test() runs")
    parser.add_argument(
        "--rows", action="store_true", help="task overhead only; last line: the JSON table rows"
    )
    parser.add_argument(
        "--phases", action="store_true", help="task overhead only, and where the time goes"
    )
    parser.add_argument("--phases-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phases_child:
        _phases_child(args.phases_child)
        return
    with tempfile.TemporaryDirectory(prefix="bench_airflow_") as tmp:
        phases: Optional[dict[str, dict[str, list[float]]]] = {} if args.phases else None
        medians = bench_tasks(Path(tmp), args.tasks, args.rounds, phases)
        if phases is not None:
            print_phases(phases)
            return
        if args.rows:
            print(json.dumps(rows(medians)), flush=True)
            return
        bench_imports(Path(tmp))


if __name__ == "__main__":
    main()
