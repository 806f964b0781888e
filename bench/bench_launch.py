"""Launch-path figures of issue 29, side by side with TorchX 0.7.0 in one interleaved run (a table).

Rows (wall time, median over ``BENCH_REPEAT`` rounds, default 15, min-max in brackets):

* ``python -c pass`` of each interpreter, then ``torchx --help`` (goal <= 1.5x python),
  ``torchx builtins`` and ``torchx runopts local_cwd`` (goals <= 2x python) and ``torchx run -s
  local_cwd utils.sh echo hi`` (goal <= 80 ms). Every round runs every command of every column
  in turn (ours, TorchX, ours, ...), so each command follows the others, as for a user who
  alternates commands: a start-up cache that another command evicts shows here;
* the API in a worker process per column: ``get_runner()``, ``run`` of one ``python -c pass``
  replica on local_cwd and ``wait(wait_interval=0.1)`` (goal <= 25 ms; TorchX polls), after
  the process's first launch (a process that launched keeps a warm supervisor for its next
  app), next to a bare ``Popen`` + ``wait`` in the same process and the first launch (3
  samples); and 128 replicas next to a bare ``Popen`` loop of 128 (goal <= 1.1x);
* ``dags/torchx_training.py`` parse time next to an empty DAG file, in an interpreter that has
  already imported ``airflow.sdk`` (goal <= 2x; TorchX has no equivalent), with the parse cache
  of ``dag_from_pipeline`` warm (Airflow parses a DAG file again and again) and without it;
* with the current local cluster (``--k8s``: Kubernetes 1.35; the script starts it with
  ``scripts/infra/up.sh`` after every other row and stops what it started):
  ``torchx run -s kubernetes --wait utils.echo`` (plain mode) next to ``_k8s_raw_job.py``, a
  fresh interpreter that imports the kubernetes client, creates a raw ``batch/v1`` Job running
  ``echo`` and polls it every 0.1 s until it is Complete (goal <= raw + 0.3 s); both in the
  namespace ``default``, deleted at the end; and the API (``Runner.run`` +
  ``wait(wait_interval=0.1)`` in a warm process). TorchX 0.7.0 has no plain mode (it needs
  Volcano), so it has no figure there.

``--rows NAME,...`` adds the rows other scripts print (``_launch_rows.ROW_SCRIPTS``; ``airflow``:
``bench_airflow.py --rows``, the ``TorchXOperator`` vs ``BashOperator`` task row). Every goal
row says ``met``/``NOT met`` with the margin left (``1 - figure / limit``). The load average is
printed before and after. ``--before DIR`` adds a column for another tree of this project
(``git archive <rev> core adapters dags examples | tar -x -C DIR``) run from the same venv with
``DIR/core:DIR/adapters`` first on ``PYTHONPATH``; ours then gets the checkout's
``core:adapters`` the same way. Byte-code is written (``PYTHONDONTWRITEBYTECODE`` is dropped),
as for a user.

TorchX 0.7.0 runs from the throwaway venv of ``_torchx_venv.py`` (``BENCH_NO_TORCHX=1``
skips it). Run: ``.venv/bin/python bench/bench_launch.py [--k8s] [--rows airflow] [--before DIR]
[--no-parse]`` (``make bench``: ``--k8s --rows airflow``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _launch_rows as more
from _torchx_venv import torchx_python
from tabulate import tabulate

REPO = Path(__file__).resolve().parents[1]
REPEAT = int(os.environ.get("BENCH_REPEAT", "15"))
REPLICAS = 128
Variant = tuple[str, str, dict[str, str]]  # (column, python, env)


CPU: list[float] = []  # CPU time (user + sys, children included) of each wall() call


def wall(argv: list[str], env: dict[str, str], cwd: str) -> float:
    """Wall time of ``argv``; its CPU time is appended to :data:`CPU`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, capture_output=True)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return took


def printed(argv: list[str], env: dict[str, str], cwd: str) -> float:
    """The wall time ``argv`` prints (``WALL CPU``); the CPU time goes to :data:`CPU`."""
    out = subprocess.run(argv, env=env, cwd=cwd, check=True, capture_output=True, text=True)
    took, cpu = out.stdout.strip().splitlines()[-1].split()
    CPU.append(float(cpu))
    return float(took)


def interleave(variants: list[Variant], fn: Callable[[Variant], float]) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {v[0]: [] for v in variants}
    for v in variants:  # warm-up (byte-code, caches)
        fn(v)
    for i in range(REPEAT):
        for v in rotated(variants, i):
            samples[v[0]].append(fn(v))
    return samples


def rotated(variants: list[Variant], i: int) -> list[Variant]:
    """The columns in round ``i``'s order: rotated by one each round.

    With a fixed order the first column always ran right after the last column's command of the
    row before (TorchX's, whose processes may still be ending): its figures, ``python -c pass``
    included, came out 10-50% slower than the same interpreter's in another column.
    """
    k = i % len(variants) if variants else 0
    return variants[k:] + variants[:k]


def fmt(samples: list[float] | None, unit: float = 1000) -> str:
    if not samples:
        return "-"
    med, low, high = statistics.median(samples), min(samples), max(samples)
    if unit == 1000:
        return f"{med * unit:.1f} ms ({low * unit:.0f}-{high * unit:.0f})"
    return f"{med:.2f} s ({low:.2f}-{high:.2f})"


def envs(args: argparse.Namespace, home: str) -> list[Variant]:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TORCHXCONFIG")}
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    base.update(TORCHX_HOME=home, HOME=home, AIRFLOW_HOME=f"{home}/airflow")
    ours = dict(base)
    out: list[Variant] = []
    if args.before:
        ours["PYTHONPATH"] = f"{REPO}/core:{REPO}/adapters"
        before = dict(base, PYTHONPATH=f"{args.before}/core:{args.before}/adapters")
        out.append(("before", sys.executable, before))
    out.insert(0, ("torchx-flow", sys.executable, ours))
    theirs, why = torchx_python()
    if theirs:
        out.append(("TorchX 0.7.0", theirs, dict(base)))
    else:
        print(f"(no TorchX 0.7.0 column: {why})")
    return out


def torchx_bin(python: str) -> str:
    return str(Path(python).parent / "torchx")


RUN = ["run", "-s", "local_cwd", "utils.sh", "echo", "hi"]
CLI_ROWS: list[tuple[str, list[str], str]] = [  # (figure, argv after the interpreter, goal)
    ("python -c pass", ["-c", "pass"], ""),
    ("torchx --help", ["--help"], "<= 1.5x python"),
    ("torchx builtins", ["builtins"], "<= 2x python"),
    ("torchx runopts local_cwd", ["runopts", "local_cwd"], "<= 2x python"),
    ("torchx " + " ".join(RUN), RUN, "<= 80 ms"),
]
GOALS: dict[str, Callable[[float], float]] = {  # reference median -> the limit
    "<= 1.5x python": lambda py: 1.5 * py,
    "<= 2x python": lambda py: 2 * py,
    "<= 80 ms": lambda _: 0.080,
    "<= 25 ms": lambda _: 0.025,
    "<= 1.1x": lambda _: 1.1,
    "<= 2x empty": lambda empty: 2 * empty,
    "<= raw + 0.3 s": lambda raw: raw + 0.3,
}
REFERENCED = ("python", "empty", "raw")  # goals relative to another row's median


def cli_rounds(variants: list[Variant], home: str) -> dict[str, dict[str, list[float]]]:
    """Every CLI row of every column in each round; ``{figure: {column: samples}}``."""
    found: dict[str, dict[str, list[float]]] = {
        row[0]: {v[0]: [] for v in variants} for row in CLI_ROWS
    }
    for i in range(REPEAT + 1):  # round 0 warms byte-code and caches
        for figure, argv, _ in CLI_ROWS:
            for col, python, env in rotated(variants, i):
                cmd = [python, *argv] if argv[0] == "-c" else [torchx_bin(python), *argv]
                took = wall(cmd, env, home)
                if i:
                    found[figure][col].append(took)
    return found


def api_rounds(
    variants: list[Variant], home: str, kube: str = "", ns: str = ""
) -> dict[str, dict[str, list[float]]]:
    """The API worker of each column, in three interleaved batches; ``{column: {key: samples}}``.

    With ``kube``, only the Kubernetes samples (``k8s``), and TorchX 0.7.0 (no plain mode) sits out.
    """
    api: dict[str, dict[str, list[float]]] = {c[0]: {} for c in variants}
    for _ in range(3):
        for col, python, env in variants:
            if kube and col == "TorchX 0.7.0":
                continue
            cmd = [
                python,
                str(Path(__file__).with_name("_launch_api.py")),
                str(max(REPEAT // 3, 1)),
                *((ns, "k8s-only") if kube else ()),
            ]
            out = subprocess.run(
                cmd,
                env=dict(env, KUBECONFIG=kube),
                cwd=home,
                check=True,
                capture_output=True,
                text=True,
            )
            for key, values in json.loads(out.stdout.strip().splitlines()[-1]).items():
                api[col].setdefault(key, []).extend(values)
    return api


def verdict(goal: str, samples: list[float] | None, ref: list[float] | None) -> str:
    """``met``/``NOT met`` with the margin left, for a goal this script can check, else ``""``.

    Args:
        goal: the goal cell (a key of :data:`GOALS`).
        samples: the figure's samples (or ``[ratio]``).
        ref: the reference row's samples for a relative goal (python, empty DAG, raw Job).
    """
    limit_of = GOALS.get(goal)
    if limit_of is None or not samples:
        return ""
    relative = any(word in goal for word in REFERENCED)
    if relative and not ref:
        return ""
    limit = limit_of(statistics.median(ref) if relative and ref else 0.0)
    margin = 1 - statistics.median(samples) / limit
    return f"{'met' if margin >= 0 else 'NOT met'} ({margin:+.0%} margin)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k8s", action="store_true", help="also the local cluster's figures")
    parser.add_argument("--before", help="another tree of this project, for a before column")
    parser.add_argument("--no-parse", action="store_true", help="leave out the DAG parse rows")
    parser.add_argument(
        "--rows", default="", help=f"rows of other scripts: {','.join(more.ROW_SCRIPTS)}"
    )
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench_launch_") as home:
        variants = envs(args, home)
        ours = [v for v in variants if v[0] != "TorchX 0.7.0"]
        cols = [v[0] for v in variants]
        rows: list[list[str]] = []

        def add(
            label: str,
            found: dict[str, list[float]],
            goal: str,
            unit: float = 1000,
            ref: dict[str, list[float]] | None = None,
        ) -> None:
            met = verdict(goal, found.get(cols[0]), (ref or {}).get(cols[0]))
            rows.append([label, *(fmt(found.get(c), unit) for c in cols), goal, met])

        cli = cli_rounds(variants, home)
        py = cli["python -c pass"]
        for figure, _, goal in CLI_ROWS:
            add(figure, cli[figure], goal, ref=py)
            if "python" in goal:
                ratio = {
                    c: statistics.median(cli[figure][c]) / statistics.median(py[c]) for c in cols
                }
                rows.append(["- ratio to python", *(f"{ratio[c]:.2f}x" for c in cols), "", ""])
        api = api_rounds(variants, home)
        add(
            "API: get_runner + run + wait(0.1), 1 replica",
            {c: api[c]["api"] for c in cols},
            "<= 25 ms",
        )
        add("- bare Popen + wait (same process)", {c: api[c]["bare"] for c in cols}, "")
        first = {c: api[c].get("api_first", []) for c in cols}
        add("- the process's first launch (lazy imports, no warm supervisor)", first, "")
        many = {
            c: statistics.median(api[c]["many"]) / statistics.median(api[c]["many_bare"])
            for c in cols
        }
        rows.append(
            [
                f"API: {REPLICAS} replicas / bare Popen loop",
                *(f"{many[c]:.2f}x" for c in cols),
                "<= 1.1x",
                verdict("<= 1.1x", [many[cols[0]]], None),
            ]
        )
        add(f"- bare Popen loop of {REPLICAS}", {c: api[c]["many_bare"] for c in cols}, "")
        if not args.no_parse:
            more.dag_parse(ours, home, add, interleave, printed, CPU)
        scripts = [
            r
            for name in filter(None, args.rows.split(","))
            for r in more.script_rows(name, len(cols))
        ]
        try:
            if args.k8s:
                k8s(ours, home, add)
        finally:  # the rows so far, also when the cluster failed
            rows += scripts
            report(rows, cols, load_before)


def k8s(ours: list[Variant], home: str, add: Callable[..., None]) -> None:
    """The Kubernetes rows, with the cluster started for them (and stopped after)."""
    with more.cluster():
        kube, ns = more.k8s_setup()
        api = api_rounds(ours, home, kube, ns)
        k8s_api = {c: api[c]["k8s"] for c in api}
        more.k8s_rows(ours, kube, ns, home, add, k8s_api, interleave, wall)


def report(rows: list[list[str]], cols: list[str], load_before: tuple[float, ...]) -> None:
    """Prints the table and the load average before and after."""
    print(tabulate(rows, headers=["figure", *cols, "goal", ""]))
    load = " ".join(f"{x:.1f}" for x in (*load_before, *os.getloadavg()))
    print(f"(median of {REPEAT} interleaved rounds, min-max in brackets; load average 1/5/15 min")
    print(f" before and after: {load})")


if __name__ == "__main__":
    main()
