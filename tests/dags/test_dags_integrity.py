"""Every DAG in dags/ imports cleanly, has the expected shape, and parses without heavy imports.

dags/.airflowignore leaves the Celery stack's test DAGs (``torchx_celery*.py``) out of a DAG
folder made of dags/ (``make run``, ``scripts/airflow-dags-test.sh``, the LocalExecutor compose
stack); each of them still imports cleanly when parsed on its own, as the Celery tests' own DAG
folder (copies, without the ignore file) does.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("airflow") is None,
    reason="apache-airflow is not installed (pip install -e '.[airflow]')",
)

DAGS = Path(__file__).resolve().parents[2] / "dags"

STACK_ONLY = sorted(p.name for p in DAGS.glob("torchx_celery*.py"))
"""The Celery stack's test DAGs (dags/README.md)."""

PARSE = """
import json, os, sys
from airflow.dag_processing.dagbag import DagBag
bags = [DagBag(dag_folder=path) for path in sys.argv[1:]]
heavy = [m for m in ("torchx.runner", "torchx.schedulers.local_scheduler", "torch", "kubernetes")
         if m in sys.modules]
dags = [d for bag in bags for d in bag.dags.values()]
print(json.dumps({
    "errors": {k: str(v) for bag in bags for k, v in bag.import_errors.items()},
    "dags": {d.dag_id: {t.task_id: sorted(t.upstream_task_ids) for t in d.tasks} for d in dags},
    "params": {d.dag_id: sorted(d.params.keys()) for d in dags},
    "files": sorted({os.path.basename(d.fileloc) for d in dags}),
    "heavy": heavy,
}))
"""


def _parse(home: Path, *paths: Path) -> dict:
    env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    env.pop("TORCHX_FLOW_PIPELINES", None)
    out = subprocess.run(
        [sys.executable, "-c", PARSE, *map(str, paths)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _parse(tmp_path_factory.mktemp("airflow_home"), DAGS)


def test_dagbag_has_no_import_errors(parsed: dict) -> None:
    assert parsed["errors"] == {}
    others = sorted(p.name for p in DAGS.glob("*.py") if p.name not in STACK_ONLY)
    assert parsed["files"] == others and len(parsed["dags"]) == len(others)


def test_the_celery_stack_dags_are_ignored_here_and_import_cleanly_alone(
    parsed: dict, tmp_path: Path
) -> None:
    assert STACK_ONLY and not set(STACK_ONLY) & set(parsed["files"])
    alone = _parse(tmp_path, *(DAGS / name for name in STACK_ONLY))  # a file: no ignore file
    assert alone["errors"] == {}
    assert alone["files"] == STACK_ONLY
    assert {"torchx_training_ddp", "torchx_train_half", "torchx_sweep"} <= set(alone["dags"])


def test_training_dag_is_prepare_train_evaluate_with_scheduler_param(parsed: dict) -> None:
    assert parsed["dags"]["torchx_training"] == {
        "prepare_data": [],
        "train": ["prepare_data"],
        "evaluate": ["train"],
    }
    assert "scheduler" in parsed["params"]["torchx_training"]


def test_parsing_dags_builds_nothing_heavy(parsed: dict) -> None:
    assert parsed["heavy"] == []
