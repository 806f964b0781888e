"""The parse cache of ``dag_from_pipeline``: the same DAG, dropped when what shaped it changes.

A stored plan is *poisoned* (one operator argument replaced, the entry's CRC kept valid) to
prove which path built a DAG: the poison shows on a hit and is gone after a change. In this
process ``RACY_SECONDS`` is 0 (the test writes its files just before parsing); the subprocess
test keeps the real rule and backdates its files instead.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _airflow_support import import_airflow_isolated
from _support import write_dist

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("airflow") is None,
    reason="apache-airflow is not installed (pip install -e '.[airflow]')",
)

PIPELINE = """\
name: cached
description: a pipeline for the parse cache
params:
  workdir: {default: /tmp/w, description: work dir}
  steps: {default: 5, type: integer, minimum: 1, maximum: 9}
  mode: {default: fast, enum: [fast, slow]}
defaults:
  scheduler: "{{ params.mode }}_unused"
steps:
  a:
    component: utils.echo
    scheduler: local_cwd
    env: {A: "1"}
    cfg: {log_dir: "{{ params.workdir }}/logs"}
    args: [--msg, "{{ params.workdir }}/a {{ params.steps }}"]
    outputs: {out: "{{ params.workdir }}/a.txt"}
  b:
    component: utils.sh
    scheduler: local_cwd
    depends_on: [a]
    resource: cpu.small
    max_retries: 2
    retry_policy: REPLICA
    args: [cat, "{{ steps.a.outputs.out }}", "{{ steps.a.app_id }}"]
  c:
    component: utils.echo
    scheduler: local_cwd
    depends_on: [a, b]
    image: "{{ params.mode }}-image"
"""
TASK_KWARGS = {
    "*": {"env": {"T": "x"}},
    "b": {"retries": 3, "execution_timeout": dt.timedelta(minutes=5)},
}
FIELDS = (
    "component", "component_args", "app", "scheduler", "scheduler_cfg", "image", "resource",
    "env", "max_retries", "role_retry_policy", "parent_run_id", "retries", "execution_timeout",
)  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def _airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Imports Airflow with an isolated AIRFLOW_HOME and undoes its root-logger changes."""
    import_airflow_isolated(
        tmp_path_factory.mktemp("airflow_home"), "torchx_airflow.operators.torchx"
    )
    yield


@pytest.fixture(autouse=True)
def _not_racy(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx_airflow import _parse_cache

    monkeypatch.setattr(_parse_cache, "RACY_SECONDS", 0.0)


@pytest.fixture
def pipeline(tmp_path: Path) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE)
    return path


def _dag(source: Any) -> Any:
    from torchx_airflow import dag_from_pipeline

    return dag_from_pipeline(
        source, param_jinja={"workdir": "{{ params.workdir }}/{{ run_id }}"},
        task_kwargs=TASK_KWARGS, tags=["t"],
    )  # fmt: skip


def _shape(dag: Any) -> dict[str, Any]:
    """Everything the DAG is made of: id, doc, params, tasks with their fields, edges."""
    return {
        "dag_id": dag.dag_id,
        "doc_md": dag.doc_md,
        "tags": sorted(dag.tags),
        "params": {k: (p.value, p.description, p.schema) for k, p in dag.params.items()},
        "tasks": [
            (t.task_id, type(t).__name__, {f: getattr(t, f) for f in FIELDS}) for t in dag.tasks
        ],
        "edges": {t.task_id: sorted(t.upstream_task_ids) for t in dag.tasks},
    }


def _entries() -> list[Path]:
    return sorted((Path(os.environ["TORCHX_HOME"]) / "cache").glob("dag-plan-*.json"))


def _poison() -> None:
    from torchx_airflow import _parse_cache

    (entry,) = _entries()
    body = entry.read_bytes().partition(b"\n")[2]
    data = json.loads(body)
    data["plan"]["tasks"]["a"]["image"] = "poisoned"
    assert _parse_cache._write(str(entry), json.dumps(data).encode())


def _image_of_a(source: Path) -> Any:
    return _dag(source).get_task("a").image


def _no_load(monkeypatch: pytest.MonkeyPatch) -> None:
    import torchx.workflow

    def fail(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the pipeline was loaded on a cache hit")

    monkeypatch.setattr(torchx.workflow, "load_pipeline", fail)


def test_cached_dag_equals_uncached(pipeline: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx.workflow import load_pipeline

    uncached = _shape(_dag(load_pipeline(pipeline)))  # a Pipeline object is never cached
    assert _entries() == []
    assert _shape(_dag(pipeline)) == uncached  # a miss: loads, validates and stores
    assert len(_entries()) == 1
    _no_load(monkeypatch)
    cached = _shape(_dag(pipeline))
    assert cached == uncached
    assert cached["edges"] == {"a": [], "b": ["a"], "c": ["b"]}  # redundant a->c dropped
    assert cached["params"]["steps"] == (5, None, {"type": "integer", "minimum": 1, "maximum": 9})
    b = cached["tasks"][1][2]
    assert b["retries"] == 3 and b["execution_timeout"] == dt.timedelta(minutes=5)
    assert b["component_args"][1] == "{{ params.workdir }}/{{ run_id }}/a.txt"
    assert b["parent_run_id"] == "{{ ti.xcom_pull(task_ids='a')['tracker_run_id'] }}"


def test_a_hit_is_served_from_the_entry(pipeline: Path) -> None:
    assert _image_of_a(pipeline) is None
    _poison()
    assert _image_of_a(pipeline) == "poisoned"
    # another param_jinja is another entry
    from torchx_airflow import dag_from_pipeline

    assert dag_from_pipeline(pipeline).get_task("a").image is None


def test_edited_pipeline_invalidates(pipeline: Path) -> None:
    _image_of_a(pipeline)
    _poison()
    pipeline.write_text(PIPELINE.replace('{A: "1"}', '{A: "2"}'))
    dag = _dag(pipeline)
    assert dag.get_task("a").image is None and dag.get_task("a").env == {"A": "2", "T": "x"}


def test_installed_component_plugin_invalidates(
    pipeline: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.specs import finder

    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    # the finder's in-process component cache: found again here, put back afterwards (the
    # plugin's `utils`-only set must not outlive this test)
    monkeypatch.setattr(finder, "_components", None)
    _image_of_a(pipeline)
    _poison()
    assert _image_of_a(pipeline) == "poisoned"
    write_dist(site, "morecomps", {"torchx.components": {"utils": "torchx.components.utils"}})
    assert _image_of_a(pipeline) is None


def test_config_file_invalidates(
    pipeline: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / ".torchxconfig"
    config.write_text("[component:utils.echo]\n")
    monkeypatch.setenv("TORCHXCONFIG", str(config))
    _image_of_a(pipeline)
    _poison()
    assert _image_of_a(pipeline) == "poisoned"
    config.write_text("[component:utils.echo]\nmsg = hi\n")
    assert _image_of_a(pipeline) is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b"torchx-airflow-dag-plan 1 00000000\n{}",  # wrong CRC
        lambda b: b"\xff\xfe\x00garbage",
        lambda b: b"",
    ],
)
def test_corrupt_entry_is_a_miss(pipeline: Path, damage: Any) -> None:
    expected = _shape(_dag(pipeline))
    (entry,) = _entries()
    entry.write_bytes(damage(entry.read_bytes()))
    assert _shape(_dag(pipeline)) == expected


def test_entry_of_the_wrong_shape_is_a_miss(pipeline: Path) -> None:
    from torchx_airflow import _parse_cache

    expected = _shape(_dag(pipeline))
    (entry,) = _entries()
    data = json.loads(entry.read_bytes().partition(b"\n")[2])
    data["plan"]["tasks"] = ["a", "b"]
    assert _parse_cache._write(str(entry), json.dumps(data).encode())
    assert _shape(_dag(pipeline)) == expected


def test_unwritable_cache_is_no_error(pipeline: Path, tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("TORCHX_HOME", str(blocker))  # cache dir under a file: cannot exist
    assert _image_of_a(pipeline) is None
    assert _image_of_a(pipeline) is None


def test_invalid_pipeline_errors_as_before_and_stores_nothing(pipeline: Path) -> None:
    from torchx.workflow import WorkflowError

    pipeline.write_text(PIPELINE.replace("utils.sh", "utils.shh"))
    for _ in range(2):
        with pytest.raises(WorkflowError, match="unknown component `utils.shh`"):
            _dag(pipeline)
    assert _entries() == []


PARSE = """\
import json, runpy, sys
import airflow.sdk
before = set(sys.modules)
runpy.run_path(sys.argv[1])
print(json.dumps(sorted(set(sys.modules) - before)))
"""
HEAVY = ("pydantic", "yaml", "torchx.workflow", "torchx.specs.finder", "torchx.specs")


def test_a_hit_imports_neither_pydantic_nor_yaml_nor_the_finder(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[3]
    cwd = tmp_path / "cwd"  # on sys.path ("" of ``python -c``): not recently changed
    cwd.mkdir()
    stamp = time.time() - 60
    os.utime(cwd, (stamp, stamp))
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }

    def parse() -> list[str]:
        out = subprocess.run(
            [sys.executable, "-c", PARSE, str(repo / "dags" / "torchx_training.py")],
            capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    def heavy(modules: list[str]) -> list[str]:
        return [m for m in modules if m.startswith(HEAVY)]

    assert "torchx.workflow" in parse()  # a miss loads the pipeline (and stores it)
    assert len(_entries()) == 1
    assert heavy(parse()) == []
