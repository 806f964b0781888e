"""Benchmark of the pipeline executor (torchx.workflow); prints a table.

Targets are measured here, never asserted in tests. Run with
``.venv/bin/python bench/bench_workflow.py`` (``BENCH_REPEAT`` runs each, default 3). Rows:

* 20 independent ``utils.echo`` steps with ``torchx pipeline run`` next to the same 20 apps run
  one after another with ``torchx run -s local_cwd utils.echo`` (target: the pipeline faster);
* a 20-step chain of ``utils.echo`` through ``run_pipeline`` next to the same 20 launches and
  waits done directly with the Runner: the difference per step is the executor's scheduling
  overhead (target <= 20 ms per step).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tabulate import tabulate

BIN = Path(sys.executable).parent
TORCHX = str(BIN / "torchx")
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
N = 20


def timed(fn: Callable[[], object], repeat: int = REPEAT) -> float:
    """Median wall time of ``fn`` in seconds over ``repeat`` runs (after one warm-up)."""
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def pipeline_yaml(path: Path, chain: bool) -> Path:
    lines = ["name: bench", "steps:"]
    for i in range(N):
        lines.append(f"  s{i}:")
        lines.append("    component: utils.echo")
        lines.append(f"    args: [--msg, step{i}]")
        if chain and i:
            lines.append(f"    depends_on: [s{i - 1}]")
    path.write_text("\n".join(lines) + "\n")
    return path


def cli_pipeline(path: Path) -> Callable[[], object]:
    argv = [TORCHX, "pipeline", "run", str(path), "--wait-interval", "1"]
    return lambda: subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)


def cli_serial() -> object:
    for i in range(N):
        subprocess.run(
            [TORCHX, "run", "-s", "local_cwd", "utils.echo", "--msg", f"step{i}"],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    return None


def executor_chain(path: Path) -> Callable[[], object]:
    from torchx.runner import get_runner
    from torchx.workflow import load_pipeline
    from torchx.workflow.executor import run_pipeline

    pipeline = load_pipeline(path)

    def run() -> object:
        with get_runner() as runner:
            result = run_pipeline(pipeline, runner=runner, wait_interval=1)
        assert result.state == "SUCCEEDED", result.summary()
        return result

    return run


def runner_chain() -> object:
    from torchx.runner import get_runner
    from torchx.runner.launch import LaunchRequest

    with get_runner() as runner:
        for i in range(N):
            handle = runner.launch(
                LaunchRequest(
                    component="utils.echo",
                    component_args=["--msg", f"step{i}"],
                    scheduler="local_cwd",
                )
            )
            runner.wait(handle, wait_interval=1)
    return None


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-workflow-") as tmp:
        os.environ["TORCHX_HOME"] = str(Path(tmp) / "home")
        os.environ.setdefault("TORCHXCONFIG", "")
        parallel = pipeline_yaml(Path(tmp) / "parallel.yaml", chain=False)
        chain = pipeline_yaml(Path(tmp) / "chain.yaml", chain=True)
        t_pipe = timed(cli_pipeline(parallel))
        t_serial = timed(cli_serial)
        t_exec = timed(executor_chain(chain))
        t_direct = timed(runner_chain)
    overhead_ms = (t_exec - t_direct) / N * 1000
    rows = [
        [
            f"torchx pipeline run: {N} independent utils.echo",
            f"{t_pipe:.2f} s",
            f"{t_pipe / t_serial:.2f}x",
            "< 1x (faster)",
        ],
        [f"{N} x torchx run -s local_cwd utils.echo, serial", f"{t_serial:.2f} s", "1.00x", ""],
        [f"run_pipeline: {N}-step chain", f"{t_exec:.2f} s", "", ""],
        [f"Runner.launch + wait, {N} in a row", f"{t_direct:.2f} s", "", ""],
        [
            "executor overhead per step (chain - loop) / N",
            f"{overhead_ms:.1f} ms",
            "",
            "<= 20 ms (< 0: faster than the loop)",
        ],
    ]
    print(tabulate(rows, headers=["case", "median", "vs serial", "target"]))


if __name__ == "__main__":
    main()
