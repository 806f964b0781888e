"""Kubernetes dry-run benchmark: ours next to TorchX 0.7.0; prints a table.

Rows: ``submit_dryrun`` of 1 role x 1000 replicas and of 200 roles x 1 replica, without and with
rendering the YAML (``str(dryrun_info)``, what ``torchx run --dryrun`` prints), with
``validate_spec=False`` (no cluster). Target: ours <= 1/5 of TorchX's time.

TorchX runs in a throwaway venv outside the checkout, created on first use under
``$XDG_CACHE_HOME/torchx-flow/bench/torchx-0.7.0`` (``pip install torchx==0.7.0 'kubernetes<31'``);
set ``TORCHX_070_PYTHON`` to use another interpreter, or ``BENCH_NO_TORCHX=1`` to skip it.
TorchX is never a dependency of this project.

Run: ``.venv/bin/python bench/bench_kubernetes.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPEAT = int(os.environ.get("BENCH_REPEAT", "5"))
SHAPES = {"1 role x 1000 replicas": (1, 1000), "200 roles x 1 replica": (200, 1)}


def worker() -> None:
    """Runs inside the measured interpreter (ours or TorchX's); prints JSON timings."""
    import statistics
    import time
    import warnings

    from torchx.schedulers.kubernetes_scheduler import create_scheduler
    from torchx.specs import AppDef, Resource, Role, macros

    warnings.simplefilter("ignore")
    scheduler = create_scheduler("bench")
    known = {name for name, _ in scheduler.run_opts()}
    cfg = {k: v for k, v in {"queue": "default", "validate_spec": False}.items() if k in known}

    def app(roles: int, replicas: int) -> AppDef:
        res = Resource(cpu=2, gpu=0, memMB=4096)
        return AppDef(
            "bench",
            [
                Role(
                    f"role{r}",
                    "img",
                    entrypoint="python",
                    resource=res,
                    num_replicas=replicas,
                    args=["-m", "train", "--rank", macros.replica_id, "--app", macros.app_id],
                    env={"A": "1", "B": "2"},
                    port_map={"c10d": 29500},
                )
                for r in range(roles)
            ],
        )

    def timed(fn: object) -> float:
        samples = []
        for _ in range(REPEAT + 1):  # the first run warms imports and caches
            start = time.perf_counter()
            fn()  # type: ignore[operator]
            samples.append(time.perf_counter() - start)
        return statistics.median(samples[1:])

    out = {}
    for label, (roles, replicas) in SHAPES.items():
        a = app(roles, replicas)
        out[f"{label}|dryrun"] = timed(lambda a=a: scheduler.submit_dryrun(a, cfg))
        out[f"{label}|dryrun + YAML"] = timed(lambda a=a: str(scheduler.submit_dryrun(a, cfg)))
    print(json.dumps(out))


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


def measure(python: str, pythonpath: str | None) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run(
        [python, os.path.abspath(__file__), "--worker"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    from tabulate import tabulate

    ours = measure(sys.executable, None)
    other_python, why = torchx_python()
    theirs = measure(other_python, None) if other_python else {}
    rows = []
    for key, seconds in ours.items():
        shape, what = key.split("|")
        base = theirs.get(key)
        ratio = f"1/{base / seconds:.1f}" if base else f"- ({why})"
        rows.append(
            [
                shape,
                what,
                f"{seconds * 1000:.0f} ms",
                f"{base * 1000:.0f} ms" if base else "-",
                ratio,
                "<= 1/5",
            ]
        )
    headers = ["app", "step", "torchx-flow", "TorchX 0.7.0", "ours/TorchX", "target"]
    print(tabulate(rows, headers=headers))


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        main()
