"""Helper of scripts/pipeline-run.sh: the Airflow and KFP runs of pipelines/pipeline.yaml.

``python scripts/_pipeline_run.py airflow|kfp WORKDIR STEPS`` runs the pipeline and prints
summary lines (for KFP one per task; kfp.local's full executor output goes to
``WORKDIR/kfp-local.log``, whose path is printed); it exits 1 unless every step succeeded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _kfp_log import output_to, summary_lines, task_names, task_states

REPO = Path(__file__).resolve().parents[1]
PIPELINE = REPO / "pipelines" / "pipeline.yaml"


def _checkpoint(workdir: Path) -> str:
    # <workdir>/out/... (kfp), <workdir>/<run id>/out/... (the Airflow DAG: a dir per run)
    found = sorted(workdir.glob("**/out/*/model.pt"), key=lambda p: p.stat().st_mtime)
    return str(found[-1]) if found else "none"


def airflow(workdir: Path, steps: int) -> int:
    from torchx_airflow.local import dag_test_argv, prepare_home

    start = time.time()
    with tempfile.TemporaryDirectory(prefix="torchx-airflow-") as home:
        env = {**os.environ, **prepare_home(Path(home) / "airflow")}
        env["AIRFLOW__CORE__DAGS_FOLDER"] = str(REPO / "dags")
        conf = {"workdir": str(workdir), "steps": steps}
        cmd = dag_test_argv(REPO / "dags" / "torchx_training.py", "torchx_training", conf)
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    lines = proc.stdout.strip().splitlines()
    try:
        summary = json.loads(lines[-1])
    except (IndexError, ValueError):
        print(f"airflow dag torchx_training FAILED: no summary (exit {proc.returncode})")
        return 1
    tasks = summary["tasks"]
    from torchx.workflow import load_pipeline
    from torchx.workflow.plan import order

    names = [n for n in order(load_pipeline(PIPELINE)) if n in tasks]
    states = ", ".join(f"{t} {tasks[t]['state']}" for t in names)
    print(
        f"airflow dag torchx_training {summary['state']}: {len(tasks)} steps ({states})"
        f" in {time.time() - start:.1f}s; checkpoint: {_checkpoint(workdir)}",
        flush=True,
    )
    return 0 if summary["state"] == "success" else 1


def kfp(workdir: Path, steps: int) -> int:
    from kfp import compiler, local

    from torchx.workflow import load_pipeline
    from torchx_kfp import pipeline_from_workflow

    workdir.mkdir(parents=True, exist_ok=True)
    pipeline = load_pipeline(PIPELINE)
    ir = workdir / "torchx_training.kfp.yaml"
    compiler.Compiler().compile(pipeline_from_workflow(pipeline), str(ir))
    print(f"compiled KFP IR: {ir}", flush=True)
    log = workdir / "kfp-local.log"
    print(f"kfp.local run (SubprocessRunner, launcher tasks); its full log: {log}", flush=True)
    start = time.time()
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(workdir / "root"))
    state = "SUCCEEDED"
    launcher = pipeline_from_workflow(pipeline, mode="launcher")
    names = task_names(launcher)
    with output_to(log):
        try:
            launcher(workdir=str(workdir), steps=steps)
        except Exception as e:  # kfp.local raises when a task fails
            state = f"FAILED ({type(e).__name__}: {e})"
    print("\n".join(summary_lines(log, state != "SUCCEEDED", names)), flush=True)
    tasks = task_states(log)
    states = ", ".join(f"{names.get(task, task)} {status}" for task, status in tasks)
    print(
        f"kfp.local pipeline torchx_training {state}: {len(pipeline.steps)} steps, {len(tasks)}"
        f" tasks finished ({states}) in {time.time() - start:.1f}s;"
        f" checkpoint: {_checkpoint(workdir)}; IR: {ir}",
        flush=True,
    )
    return 0 if state == "SUCCEEDED" else 1


if __name__ == "__main__":
    mode, workdir, steps = sys.argv[1], Path(sys.argv[2]).resolve(), int(sys.argv[3])
    sys.exit(airflow(workdir, steps) if mode == "airflow" else kfp(workdir, steps))
