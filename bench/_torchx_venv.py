"""TorchX 0.7.0 next to ours: the throwaway venv and the worker run the bench scripts share.

TorchX runs in a venv outside the checkout, created on first use under
``$XDG_CACHE_HOME/torchx-flow/bench/torchx-0.7.0`` (``pip install torchx==0.7.0 'kubernetes<31'``);
``TORCHX_070_PYTHON`` names another interpreter, ``BENCH_NO_TORCHX=1`` skips it. TorchX is never
a dependency of this project. Standard library only: a worker imports :func:`timed` from
either interpreter (a script's folder is first on ``sys.path``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def torchx_python() -> tuple[str | None, str]:
    """The TorchX 0.7.0 interpreter, creating its venv if needed; ``(None, why)`` if unavailable."""
    if os.environ.get("BENCH_NO_TORCHX"):
        return None, "BENCH_NO_TORCHX set"
    if os.environ.get("TORCHX_070_PYTHON"):
        return os.environ["TORCHX_070_PYTHON"], ""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "torchx-flow"
    venv = cache / "bench" / "torchx-0.7.0"
    python = venv / "bin" / "python"
    if not python.exists():
        try:
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            pip = [str(python), "-m", "pip", "install", "--quiet", "torchx==0.7.0", "kubernetes<31"]
            subprocess.run(pip, check=True)
        except subprocess.CalledProcessError as e:
            return None, f"could not install torchx==0.7.0 ({e})"
    return str(python), ""


def measure(script: str, python: str) -> dict[str, float]:
    """Runs ``script --worker`` under ``python`` (no inherited ``PYTHONPATH``, from ``/``).

    Args:
        script: the bench script whose ``--worker`` prints one JSON line of timings last.
        python: the interpreter to measure (ours or TorchX 0.7.0's).

    Returns:
        The timings the worker printed.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [python, os.path.abspath(script), "--worker"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median seconds of ``repeat`` calls after one warm-up call (imports and caches)."""
    samples = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples[1:])
