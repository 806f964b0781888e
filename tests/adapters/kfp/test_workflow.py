"""pipeline_from_workflow: the shared pipeline definition compiled with the real KFP compiler."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("kfp", reason="kfp is not installed (pip install -e '.[kfp]')")
pytest.importorskip("pydantic", reason="pydantic is not installed (pip install -e '.[workflow]')")

from _kfp_support import compile_ir, executor

from torchx.workflow import Pipeline, Step, load_pipeline, validate_pipeline
from torchx_kfp import pipeline_from_workflow

REPO = Path(__file__).resolve().parents[3]


def _tasks(ir: dict) -> dict[str, dict]:
    return {t["taskInfo"]["name"]: t for t in ir["root"]["dag"]["tasks"].values()}


def test_example_pipeline_compiles_with_params_and_order(tmp_path: Path) -> None:
    ir, _ = compile_ir(
        pipeline_from_workflow(load_pipeline(REPO / "pipelines/pipeline.yaml")), tmp_path
    )
    params = ir["root"]["inputDefinitions"]["parameters"]
    assert {k: v["parameterType"] for k, v in params.items()} == {
        "scheduler": "STRING",
        "steps": "NUMBER_INTEGER",
        "trainer_resource": "STRING",
        "workdir": "STRING",
    }
    tasks = _tasks(ir)
    keys = {
        name: k for k, t in ir["root"]["dag"]["tasks"].items() for name in [t["taskInfo"]["name"]]
    }
    assert tasks["train"]["dependentTasks"] == [keys["prepare_data"]]
    assert tasks["evaluate"]["dependentTasks"] == [keys["train"]]
    # prepare_data and evaluate are single tasks: container tasks whose args carry the
    # pipeline inputs and the train task's app_id; dist.ddp (ports) goes through a launcher
    assert "torchx-workflow-step" in tasks["train"]["componentRef"]["name"]
    inputs = tasks["train"]["inputs"]["parameters"]
    upstream = inputs["upstream"]["runtimeValue"]["constant"]
    # no channel inside a constant: a marker there, the value an input of its own
    marker = upstream["prepare_data.tracker_run_id"]
    assert marker.startswith("{{torchx-kfp:") and "$" not in str(upstream)
    lifted = inputs["torchx_channel_" + marker.strip("{}").split(":")[1]]
    assert lifted["taskOutputParameter"] == {
        "outputParameterKey": "tracker_run_id",
        "producerTask": keys["prepare_data"],
    }
    evaluate = tasks["evaluate"]["inputs"]["parameters"]
    assert evaluate["parent_run_id"]["taskOutputParameter"]["producerTask"] == keys["train"]
    assert any(
        v.get("taskOutputParameter", {}).get("outputParameterKey") == "app_id"
        for v in evaluate.values()
    )
    assert all(t["cachingOptions"] == {} for t in tasks.values())  # caching off


def test_single_task_steps_are_container_tasks_others_launchers(tmp_path: Path) -> None:
    p = validate_pipeline(
        Pipeline(
            name="mixed",
            params={"msg": "hi", "res": "cpu.small"},
            steps={
                "static": Step(
                    component="utils.echo", args=["--msg", "fixed"], resource="cpu.small"
                ),
                "dynamic": Step(component="utils.echo", args=["--msg", "{{ params.msg }}"]),
                "sized": Step(component="utils.echo", resource="{{ params.res }}"),
                "after": Step(
                    component="utils.echo", args=["--msg", "done"], depends_on=["dynamic"]
                ),
            },
        )
    )
    ir, _ = compile_ir(pipeline_from_workflow(p), tmp_path)
    tasks = _tasks(ir)
    static = executor(ir, tasks["static"]["componentRef"]["name"].removeprefix("comp-"))
    assert static["command"][-1] == "echo" and static["args"] == ["fixed"]
    assert static["resources"]["cpuLimit"] == 1.0
    # the parameter reaches the container task as an input of its own
    dynamic = tasks["dynamic"]["inputs"]["parameters"]
    assert any(v.get("componentInputParameter") == "msg" for v in dynamic.values())
    # a resource chosen at run time cannot be a container task's: launcher
    assert "torchx-workflow-step" in tasks["sized"]["componentRef"]["name"]
    parent = tasks["after"]["inputs"]["parameters"]["parent_run_id"]["taskOutputParameter"]
    assert parent["outputParameterKey"] == "tracker_run_id"  # lineage: its parent step's run
    producer = ir["root"]["dag"]["tasks"][parent["producerTask"]]
    assert producer["taskInfo"]["name"] == "dynamic"
    with pytest.raises(ValueError, match="step `sized` cannot be one KFP container task"):
        compile_ir(pipeline_from_workflow(p, mode="container"), tmp_path)
    ir, _ = compile_ir(pipeline_from_workflow(p, mode="launcher"), tmp_path)
    assert all("torchx-workflow-step" in t["componentRef"]["name"] for t in _tasks(ir).values())


def test_unknown_mode() -> None:
    p = load_pipeline(REPO / "pipelines/pipeline.yaml")
    with pytest.raises(ValueError, match="unknown mode `fast`: use auto, launcher or container"):
        pipeline_from_workflow(p, mode="fast")
