"""Kubernetes dry-run benchmark: ours next to TorchX 0.7.0; prints a table.

Rows: ``submit_dryrun`` of 1 role x 1000 replicas and of 200 roles x 1 replica, without and with
rendering the YAML (``str(dryrun_info)``, what ``torchx run --dryrun`` prints), with
``validate_spec=False`` (no cluster). Target: ours <= 1/5 of TorchX's time.

TorchX runs in the throwaway venv of ``bench/_torchx_venv.py`` (created on first use outside the
checkout; ``TORCHX_070_PYTHON`` names another interpreter, ``BENCH_NO_TORCHX=1`` skips it).

Run: ``.venv/bin/python bench/bench_kubernetes.py``.
"""

from __future__ import annotations

import json
import os
import sys

from _torchx_venv import measure, torchx_python

REPEAT = int(os.environ.get("BENCH_REPEAT", "5"))
SHAPES = {"1 role x 1000 replicas": (1, 1000), "200 roles x 1 replica": (200, 1)}


def worker() -> None:
    """Runs inside the measured interpreter (ours or TorchX's); prints JSON timings."""
    import warnings

    from _torchx_venv import timed

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

    out = {}
    for label, (roles, replicas) in SHAPES.items():
        a = app(roles, replicas)
        out[f"{label}|dryrun"] = timed(lambda a=a: scheduler.submit_dryrun(a, cfg), REPEAT)
        out[f"{label}|dryrun + YAML"] = timed(
            lambda a=a: str(scheduler.submit_dryrun(a, cfg)), REPEAT
        )
    print(json.dumps(out))


def main() -> None:
    from tabulate import tabulate

    ours = measure(__file__, sys.executable)
    other_python, why = torchx_python()
    theirs = measure(__file__, other_python) if other_python else {}
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
