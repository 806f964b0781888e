"""One pipeline definition, the same behaviour under every runner.

The same YAML runs with ``torchx pipeline run`` (local executor) and as an Airflow DAG under
``dag.test()`` (``torchx_airflow.dag_from_pipeline``); the KFP side compiles it and runs it
with kfp.local (``torchx_kfp.pipeline_from_workflow``). Every path launches its steps on a
``recording`` scheduler, a real plugin (entry point ``torchx.schedulers``) that runs apps like
``local_cwd`` and appends what it was asked to launch to a JSON-lines file. The tests compare
the step order, resources, env, retries and tracker parents recorded by each path, and the
tracker lineage they leave behind.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from _support import TORCHX, write_dist, write_file

pytest.importorskip("pydantic", reason="pydantic is not installed (pip install -e '.[workflow]')")

pytestmark = pytest.mark.slow

RECORDING = """
import json, os
from torchx.schedulers.local_scheduler import LocalScheduler, create_scheduler as _create


class RecordingScheduler(LocalScheduler):
    def schedule(self, dryrun_info):
        app_id = super().schedule(dryrun_info)
        app = dryrun_info._app
        roles = [
            {
                "cpu": r.resource.cpu, "gpu": r.resource.gpu, "memMB": r.resource.memMB,
                "max_retries": r.max_retries, "retry_policy": r.retry_policy.value,
                "env": {k: v for k, v in r.env.items() if k.startswith("EQ_")},
                "parent": r.env.get("TORCHX_PARENT_RUN_ID", ""),
            }
            for r in app.roles
        ]
        with open(os.environ["EQ_RECORD"], "a") as f:
            f.write(json.dumps({"app_id": app_id, "roles": roles}) + "\\n")
        return app_id


def create_scheduler(session_name, **kwargs):
    scheduler = _create(session_name, **kwargs)
    scheduler.__class__ = RecordingScheduler
    return scheduler
"""

PIPELINE = """\
name: equivalence
params:
  scheduler: {default: recording}
  word: {default: hello}
defaults:
  scheduler: "{{ params.scheduler }}"
  max_retries: 1
  retry_policy: REPLICA
  resource: cpu.small
  env: {EQ_COMMON: common}
steps:
  first:
    component: utils.echo
    args: [--msg, "{{ params.word }}"]
    outputs: {marker: "{{ params.word }}-{{ steps.first.app_id }}"}
  second:
    component: utils.echo
    env: {EQ_STEP: two}
    max_retries: 2
    args: [--msg, "{{ steps.first.outputs.marker }}"]
  third:
    component: utils.echo
    resource: cpu.medium
    retry_policy: APPLICATION
    args: {msg: "after {{ steps.second.app_id }}"}
"""


def _res(name: str) -> dict[str, int]:
    from torchx.specs import resource

    r = resource(h=name)
    return {"cpu": r.cpu, "gpu": r.gpu, "memMB": r.memMB}


def expected_roles() -> list[dict[str, Any]]:
    common = {"EQ_COMMON": "common"}
    return [
        {**_res("cpu.small"), "max_retries": 1, "retry_policy": "REPLICA", "env": common},
        {
            **_res("cpu.small"),
            "max_retries": 2,
            "retry_policy": "REPLICA",
            "env": {**common, "EQ_STEP": "two"},
        },
        {**_res("cpu.medium"), "max_retries": 1, "retry_policy": "APPLICATION", "env": common},
    ]


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    root = tmp_path / "site"
    write_file(root, "eq_recording.py", RECORDING)
    write_dist(
        root, "eq-recording", {"torchx.schedulers": {"recording": "eq_recording:create_scheduler"}}
    )
    record = tmp_path / "record.jsonl"
    tracker = tmp_path / "tracker"
    path = tmp_path / "equivalence.yaml"
    path.write_text(PIPELINE)
    env = {
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
        "EQ_RECORD": str(record),
        "TORCHX_TRACKERS": "fsspec",
        "TORCHX_TRACKER_FSSPEC_CONFIG": str(tracker),
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return {"path": path, "record": record, "tracker": tracker, "env": {**os.environ, **env}}


def _records(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def _check(setup: dict[str, Any], handles: list[str]) -> None:
    """Same order, resources, env, retries and parents as the definition says."""
    from torchx.tracker.backend.fsspec import create

    records = _records(setup["record"])
    app_ids = [h.rsplit("/", 1)[1] for h in handles]
    assert [r["app_id"] for r in records] == app_ids  # launched in step order
    roles = [r["roles"][0] for r in records]
    assert [{k: v for k, v in r.items() if k != "parent"} for r in roles] == expected_roles()
    assert [r["parent"] for r in roles] == ["", handles[0], handles[1]]
    lineage = create(str(setup["tracker"])).lineage(handles[2])
    assert lineage.ancestors == [handles[1], handles[0]]


def test_local_run(setup: dict[str, Any]) -> None:
    proc = subprocess.run(
        [TORCHX, "pipeline", "run", str(setup["path"]), "--json"],
        capture_output=True,
        text=True,
        env=setup["env"],
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    end = json.loads(proc.stdout.splitlines()[-1])
    steps = end["steps"]
    assert list(steps) == ["first", "second", "third"]
    _check(setup, [steps[s]["app_handle"] for s in steps])


@pytest.mark.skipif(
    importlib.util.find_spec("airflow") is None,
    reason="apache-airflow is not installed (pip install -e '.[airflow]')",
)
def test_airflow_dag_test(
    setup: dict[str, Any], tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from torchx_airflow.local import dag_test_argv, prepare_home

    env = {
        **setup["env"],
        **prepare_home(
            tmp_path / "airflow", template=tmp_path_factory.getbasetemp() / "airflow-template"
        ),
    }
    dag_file = Path(env["AIRFLOW__CORE__DAGS_FOLDER"]) / "equivalence_dag.py"
    dag_file.write_text(
        textwrap.dedent(f"""\
        from torchx_airflow import dag_from_pipeline
        dag = dag_from_pipeline({str(setup["path"])!r})
    """)
    )
    proc = subprocess.run(
        dag_test_argv(dag_file, "equivalence"),
        capture_output=True,
        text=True,
        env=env,
        timeout=280,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["state"] == "success"
    tasks = summary["tasks"]
    handles = [tasks[s]["xcom"]["return_value"]["app_handle"] for s in ("first", "second", "third")]
    _check(setup, handles)


def _kfp_ir(setup: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    import yaml
    from kfp import compiler

    from torchx.workflow import load_pipeline
    from torchx_kfp import pipeline_from_workflow

    out = tmp_path / "equivalence.kfp.yaml"
    compiler.Compiler().compile(
        pipeline_from_workflow(load_pipeline(setup["path"], registries=False)), str(out)
    )
    return next(yaml.safe_load_all(out.read_text()))


def _container_facts(ir: dict[str, Any], task: dict[str, Any]) -> dict[str, Any]:
    """Resources, env and retries of a container task, as the compiled IR states them."""
    name = task["componentRef"]["name"].removeprefix("comp-")
    container = ir["deploymentSpec"]["executors"][f"exec-{name}"]["container"]
    res = container["resources"]
    return {
        "cpu": int(res["cpuLimit"]),
        "memMB": int(res["resourceMemoryLimit"].removesuffix("M")),
        "max_retries": task.get("retryPolicy", {}).get("maxRetryCount", 0),
        "env": {
            e["name"]: e["value"] for e in container.get("env", []) if e["name"].startswith("EQ_")
        },
    }


@pytest.mark.skipif(importlib.util.find_spec("kfp") is None, reason="kfp is not installed")
def test_kfp_compiled_ir(setup: dict[str, Any], tmp_path: Path) -> None:
    """Same tasks, order and parameters; container tasks carry the same resources, env and
    retries in the IR, launcher tasks the same step definitions."""
    from torchx.workflow import load_pipeline
    from torchx_kfp._in_task.workflow_run import pipeline_from_json

    ir = _kfp_ir(setup, tmp_path)
    tasks = ir["root"]["dag"]["tasks"]
    by_step = {t["taskInfo"]["name"]: (k, t) for k, t in tasks.items()}
    assert sorted(by_step) == ["first", "second", "third"]
    key = {step: k for step, (k, _) in by_step.items()}
    assert by_step["first"][1].get("dependentTasks", []) == []
    assert by_step["second"][1]["dependentTasks"] == [key["first"]]
    assert by_step["third"][1]["dependentTasks"] == [key["second"]]
    params = ir["root"]["inputDefinitions"]["parameters"]
    assert {k: v["defaultValue"] for k, v in params.items()} == {
        "scheduler": "recording",
        "word": "hello",
    }
    original = load_pipeline(setup["path"], registries=False)
    expected = dict(zip(("first", "second", "third"), expected_roles(), strict=True))
    kinds = {}
    for step, (_, task) in by_step.items():
        inputs = task["inputs"]["parameters"]
        if "pipeline" in inputs:  # a launcher task: it carries the definition
            kinds[step] = "launcher"
            carried = pipeline_from_json(inputs["pipeline"]["runtimeValue"]["constant"])
            assert inputs["step"]["runtimeValue"]["constant"] == step
            for field in ("resource", "env", "max_retries", "retry_policy", "scheduler", "args"):
                mine, theirs = carried.effective(step), original.effective(step)
                assert getattr(mine, field) == getattr(theirs, field), (step, field)
        else:  # a container task: the IR itself states resources, env and retries
            kinds[step] = "container"
            want = expected[step]
            assert _container_facts(ir, task) == {
                "cpu": want["cpu"],
                "memMB": want["memMB"],
                "max_retries": want["max_retries"],
                "env": want["env"],
            }
            parent = inputs["parent_run_id"]["taskOutputParameter"]
            assert parent["producerTask"] == task["dependentTasks"][0]
    # REPLICA retries need the launcher; `third` (APPLICATION) fits one KFP task
    assert kinds == {"first": "launcher", "second": "launcher", "third": "container"}


@pytest.mark.skipif(importlib.util.find_spec("kfp") is None, reason="kfp is not installed")
def test_kfp_local_run(setup: dict[str, Any], tmp_path: Path) -> None:
    code = textwrap.dedent(f"""\
        import json
        from kfp import local
        from torchx.workflow import load_pipeline
        from torchx_kfp import pipeline_from_workflow

        local.init(runner=local.SubprocessRunner(use_venv=False),
                   pipeline_root={str(tmp_path / "kfp_root")!r})
        pipeline_from_workflow(load_pipeline({str(setup["path"])!r}), mode="launcher")()
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=setup["env"],
        timeout=280,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    records = _records(setup["record"])
    handles = [f"recording://torchx/{r['app_id']}" for r in records]
    assert len(handles) == 3
    for handle in handles:
        assert f"TorchX app {handle} SUCCEEDED" in proc.stdout + proc.stderr
    _check(setup, handles)
