"""Slurm benchmark: dry run next to TorchX 0.7.0, submit + wait next to a bare ``sbatch --wait``.

Rows:
- ``submit_dryrun`` of 1 role x 1000 replicas (1000 heterogeneous components), without and with
  rendering the script (``str(dryrun_info)``, what ``torchx run --dryrun`` prints); both
  schedulers ask ``sinfo`` for the partition's memory once per dry run when Slurm answers;
- ``utils.echo`` submitted and waited for on the local Slurm (``scripts/infra/slurm.sh start``):
  ours (``submit`` then ``describe``/``wait_for_change`` until it ends) next to ``sbatch --wait``
  of a one-line ``srun echo`` script. Skipped when no Slurm answers.

TorchX 0.7.0 runs in the cached venv of ``bench/_torchx_venv.py`` (``torchx_python``);
``BENCH_NO_TORCHX=1`` skips it. Run: ``.venv/bin/python bench/bench_slurm.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _torchx_venv import measure, torchx_python

REPEAT = int(os.environ.get("BENCH_REPEAT", "5"))
SUBMITS = int(os.environ.get("BENCH_SUBMITS", "3"))


def worker() -> None:
    """Runs inside the measured interpreter (ours or TorchX's); prints JSON timings."""
    import warnings

    from _torchx_venv import timed

    from torchx.schedulers.slurm_scheduler import create_scheduler
    from torchx.specs import AppDef, Resource, Role, macros

    warnings.simplefilter("ignore")
    scheduler = create_scheduler("bench")
    role = Role(
        "trainer",
        "/tmp",
        entrypoint="python",
        resource=Resource(cpu=2, gpu=0, memMB=4096),
        num_replicas=1000,
        args=["-m", "train", "--rank", macros.replica_id, "--app", macros.app_id],
        env={"A": "1", "B": "2"},
    )
    app = AppDef("bench", [role])

    out = {
        "1 role x 1000 replicas|dryrun": timed(lambda: scheduler.submit_dryrun(app, {}), REPEAT),
        "1 role x 1000 replicas|dryrun + script": timed(
            lambda: str(scheduler.submit_dryrun(app, {})), REPEAT
        ),
    }
    print(json.dumps(out))


def slurm_up() -> str:
    """Why the local Slurm cannot be used, or ``""`` when it answers."""
    try:
        out = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"no Slurm ({type(e).__name__}); scripts/infra/slurm.sh start, set SLURM_CONF"
    return "" if "is UP" in out.stdout else "slurmctld does not answer (SLURM_CONF?)"


def submit_and_wait() -> dict[str, float]:
    """Median seconds from submit to the end of ``utils.echo``: ours and a bare ``sbatch``."""
    import statistics

    from torchx.components.utils import echo
    from torchx.schedulers.slurm_scheduler import create_scheduler
    from torchx.specs.api import is_terminal

    sched = create_scheduler("bench")
    ours, bare = [], []
    with tempfile.TemporaryDirectory(prefix="bench_slurm_") as tmp:
        script = Path(tmp) / "bare.sh"
        script.write_text("#!/bin/bash\n#SBATCH --job-name=bare-0\nsrun echo hello\n")
        for i in range(SUBMITS):
            start = time.perf_counter()
            app_id = sched.submit(echo(msg="hello"), {"job_dir": f"{tmp}/ours{i}"})
            while True:
                desc = sched.describe(app_id)
                if desc is not None and is_terminal(desc.state):
                    break
                sched.wait_for_change(app_id, 1.0)
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            subprocess.run(
                ["sbatch", "--wait", "--parsable", f"--chdir={tmp}", str(script)],
                check=True,
                capture_output=True,
            )
            bare.append(time.perf_counter() - start)
    return {"ours": statistics.median(ours), "bare": statistics.median(bare)}


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
        base_ms = f"{base * 1000:.0f} ms" if base else "-"
        rows.append([shape, what, f"{seconds * 1000:.0f} ms", base_ms, ratio])
    print(tabulate(rows, headers=["app", "step", "torchx-flow", "TorchX 0.7.0", "ours/TorchX"]))
    print()
    down = slurm_up()
    if down:
        print(f"submit + wait: skipped ({down})")
        return
    t = submit_and_wait()
    print(
        tabulate(
            [["utils.echo, submit + wait", f"{t['ours']:.2f} s", f"{t['bare']:.2f} s"]],
            headers=["", "torchx-flow", "sbatch --wait"],
        )
    )


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        main()
