"""Benchmarks for the core and local_cwd; prints a table.

Targets are measured here, never asserted in tests.

Run with ``make bench`` (or ``.venv/bin/python bench/bench_local.py``). Rows:

* ``torchx --help``, ``torchx builtins`` and ``torchx runopts local_cwd`` wall time next to
  ``python -c pass`` (targets of issue 29: --help <= 1.5x, builtins and runopts <= 2x);
* ``torchx run -s local_cwd utils.sh echo hi`` end to end;
* process exit -> ``Runner.wait()`` return latency (target <= 20 ms);
* N = 1/32/128 replicas of ``python -c pass`` to SUCCEEDED next to a bare Popen-and-wait loop of the
  same N (target: 128 replicas <= 1.1x the bare loop).

``bench_launch.py`` prints the same CLI and API figures side by side with TorchX 0.7.0.
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
REPEAT = int(os.environ.get("BENCH_REPEAT", "5"))


def timed(fn: Callable[[], object], repeat: int = REPEAT) -> tuple[float, float]:
    """Median and min wall time of ``fn`` in seconds over ``repeat`` runs (after one warm-up)."""
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), min(samples)


def run_cmd(*argv: str) -> Callable[[], object]:
    def _run() -> object:
        return subprocess.run(
            argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    return _run


def bench_cli(rows: list[list[object]]) -> None:
    base, _ = timed(run_cmd(sys.executable, "-c", "pass"))
    rows.append(["python -c pass", f"{base * 1000:.1f} ms", "1.00x", ""])
    for label, argv, target in [
        ("torchx --help", [TORCHX, "--help"], "<= 1.5x"),
        ("torchx builtins", [TORCHX, "builtins"], "<= 2x"),
        ("torchx runopts local_cwd", [TORCHX, "runopts", "local_cwd"], "<= 2x"),
    ]:
        med, _ = timed(run_cmd(*argv))
        rows.append([label, f"{med * 1000:.1f} ms", f"{med / base:.2f}x", target])
    med, _ = timed(run_cmd(TORCHX, "run", "-s", "local_cwd", "utils.sh", "echo", "hi"), repeat=3)
    rows.append(
        ["torchx run -s local_cwd utils.sh echo hi", f"{med * 1000:.1f} ms", "", "<= 80 ms"]
    )


def _app(n: int, args: list[str]) -> object:
    from torchx import specs

    role = specs.Role(
        name="r",
        image="",
        entrypoint=sys.executable,
        args=args,
        num_replicas=n,
        resource=specs.Resource(cpu=1, gpu=0, memMB=64),
    )
    return specs.AppDef(name="bench", roles=[role])


def bench_wait_latency(rows: list[list[object]]) -> None:
    from torchx.runner import get_runner

    script = "import time; time.sleep(0.3); print(repr(time.time()), flush=True)"
    latencies = []
    with get_runner() as runner:
        for _ in range(REPEAT):
            handle = runner.run(_app(1, ["-c", script]), scheduler="local_cwd")
            status = runner.wait(handle, wait_interval=10)
            returned = time.time()
            assert status is not None and status.state.name == "SUCCEEDED", status
            printed = float("".join(runner.log_lines(handle, "r", 0)).strip())
            latencies.append(returned - printed)
    med = statistics.median(latencies)
    rows.append(["replica exit -> wait() return", f"{med * 1000:.1f} ms", "", "<= 20 ms"])


def bench_replicas(rows: list[list[object]]) -> None:
    from torchx.runner import get_runner

    for n in (1, 32, 128):

        def bare(n: int = n) -> object:
            procs = [subprocess.Popen([sys.executable, "-c", "pass"]) for _ in range(n)]
            return [p.wait() for p in procs]

        def local(n: int = n) -> object:
            with get_runner() as runner:
                handle = runner.run(_app(n, ["-c", "pass"]), scheduler="local_cwd")
                status = runner.wait(handle, wait_interval=10)
                assert status is not None and status.state.name == "SUCCEEDED", status
            return status

        repeat = 3 if n > 1 else REPEAT
        bare_t, _ = timed(bare, repeat)
        local_t, _ = timed(local, repeat)
        target = {1: "<= 25 ms", 128: "<= 1.1x"}.get(n, "")
        rows.append(
            [
                f"{n} x python -c pass: local_cwd",
                f"{local_t * 1000:.1f} ms",
                f"{local_t / bare_t:.2f}x",
                target,
            ]
        )
        rows.append(
            [f"{n} x python -c pass: bare Popen loop", f"{bare_t * 1000:.1f} ms", "1.00x", ""]
        )


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="torchx_bench_") as home:
        os.environ["TORCHX_HOME"] = home
        os.environ["TORCHXCONFIG"] = ""
        rows: list[list[object]] = []
        bench_cli(rows)
        bench_wait_latency(rows)
        bench_replicas(rows)
    print(tabulate(rows, headers=["benchmark", "median", "ratio", "target"]))


if __name__ == "__main__":
    main()
