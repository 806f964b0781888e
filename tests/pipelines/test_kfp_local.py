"""The example pipelines run end to end under kfp.local.

Container steps run under ``DockerRunner`` on the local Docker engine (this venv mounted into
the pipeline's image, ``torchx-flow/torch:2.13.0``), passing the dataset, model and metrics as
KFP artifacts; launcher steps run under ``SubprocessRunner`` (or, in the workflow pipeline,
in the pipeline's image under ``DockerRunner``) and submit their apps to ``local_cwd``.
Outputs asserted: the checkpoint, the metrics and the tracker lineage prepare -> train ->
evaluate; for the workflow pipeline, that its artifacts alone carry the data.
"""

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("kfp")

REPO = Path(__file__).resolve().parents[2]


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"pipeline_{name}", REPO / "pipelines" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def task_outputs(result: Any) -> dict[str, Any]:
    return dict(result.outputs) if hasattr(result, "outputs") else {}


def assert_training_outputs(work: Path) -> None:
    from torchx.tracker.backend.fsspec import create

    ckpts = list((work / "out").glob("*/model.pt"))
    assert len(ckpts) == 1, ckpts
    metrics = json.loads((work / "metrics.json").read_text())
    assert metrics["checkpoint"] == str(ckpts[0])
    assert metrics["mse"] >= 0
    train_app_id = ckpts[0].parent.name
    tracker = create(str(work / "tracker"))
    runs = list(tracker.run_ids())
    train = next(r for r in runs if r.endswith(f"/{train_app_id}"))
    evaluate = next(r for r in runs if "/evaluate-" in r)
    assert [s.source_run_id for s in tracker.sources(evaluate)] == [train]
    (prepare,) = [s.source_run_id for s in tracker.sources(train)]
    assert "prepare" in prepare
    assert tracker.metadata(evaluate)["mse"] == metrics["mse"]
    assert tracker.artifacts(train)["checkpoint"].path == str(ckpts[0])


def assert_artifact_outputs(root: Path, tracker_dir: Path) -> None:
    """The checkpoint, dataset and metrics are KFP artifacts under the pipeline root."""
    from torchx.tracker.backend.fsspec import create

    (run,) = list(root.iterdir())
    (ckpt,) = list((run / "train" / "model").glob("*/model.pt"))
    assert json.loads((run / "prepare-data" / "dataset" / "dataset.json").read_text())["seed"] == 0
    metrics = json.loads((run / "evaluate" / "metrics").read_text())
    assert metrics["checkpoint"] == str(ckpt) and metrics["mse"] >= 0
    tracker = create(str(tracker_dir))
    train = next(r for r in tracker.run_ids() if r.endswith(f"/{ckpt.parent.name}"))
    evaluate = next(r for r in tracker.run_ids() if "/evaluate-" in r)
    assert [s.source_run_id for s in tracker.sources(evaluate)] == [train]
    (prepare,) = [s.source_run_id for s in tracker.sources(train)]
    assert "/prepare-data-" in prepare
    assert tracker.metadata(evaluate)["mse"] == metrics["mse"]
    assert tracker.artifacts(train)["checkpoint"].path == str(ckpt)


@pytest.mark.docker
@pytest.mark.slow
def test_training_pipeline_under_docker_runner(tmp_path: Path) -> None:
    """Data goes from task to task as KFP artifacts (no shared host directory)."""
    from kfp import local

    from torchx_kfp.local import venv_docker_runner

    tracker = tmp_path / "tracker"
    tracker.mkdir()
    local.init(
        runner=venv_docker_runner(read_only=[str(REPO)], read_write=[str(tracker)]),
        pipeline_root=str(tmp_path / "root"),
    )
    load("torchx_training").torchx_training(
        examples=str(REPO / "examples"), tracker_dir=str(tracker), steps=10
    )
    assert_artifact_outputs(tmp_path / "root", tracker)


@pytest.mark.docker
@pytest.mark.slow
def test_workflow_pipeline_hands_over_artifacts_under_docker_runner(tmp_path: Path) -> None:
    """``pipelines/pipeline.yaml`` in auto mode: prepare and evaluate are container tasks, train
    a launcher task (``dist.ddp`` on ``local_cwd`` inside its container). kfp.local applies
    no claim, so each task's ``workdir`` is its own: only the artifacts carry the dataset and
    the checkpoint to evaluate, and its metrics out."""
    import torch
    from kfp import local

    from torchx_kfp.local import venv_docker_runner

    root = tmp_path / "root"
    local.init(runner=venv_docker_runner(read_only=[str(REPO)]), pipeline_root=str(root))
    load("torchx_training_workflow").torchx_training_workflow(steps=10)
    (dataset,) = root.glob("*/*/dataset")
    (ckpt,) = root.glob("*/*/checkpoint")
    (metrics_file,) = root.glob("*/*/metrics")
    assert json.loads(dataset.read_text())["seed"] == 0
    assert torch.load(ckpt, weights_only=True)["steps"] == 10  # train.py's checkpoint
    metrics = json.loads(metrics_file.read_text())
    assert metrics["checkpoint"] == str(ckpt) and metrics["mse"] >= 0  # evaluate read it


@pytest.mark.slow
def test_training_pipeline_launcher_under_subprocess_runner(tmp_path: Path) -> None:
    from kfp import local

    work = tmp_path / "work"
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(tmp_path / "root"))
    load("torchx_training_launcher").torchx_training_launcher(
        examples=str(REPO / "examples"),
        workdir=str(work),
        tracker_dir=str(work / "tracker"),
        steps="10",
        scheduler="local_cwd",
    )
    assert_training_outputs(work)


@pytest.mark.docker
def test_echo_pipeline_under_docker_runner(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from kfp import local

    from torchx_kfp.local import venv_docker_runner

    local.init(runner=venv_docker_runner(), pipeline_root=str(tmp_path / "root"))
    load("torchx_echo").torchx_echo(msg="hi from a test")
    assert "hi from a test" in capfd.readouterr().out
    outputs = list((tmp_path / "root").glob("*/*/tracker_run_id"))
    assert len(outputs) == 1 and outputs[0].read_text().startswith("kfp://")


@pytest.mark.docker
def test_no_container_left_behind() -> None:
    """Every DockerRunner container is auto-removed (only this project's label is checked)."""
    from _infra import docker_host

    host, why = docker_host()
    if host is None:
        pytest.skip(why)
    import docker

    from torchx_kfp.local import LOCAL_LABEL

    client = docker.DockerClient(base_url=host)
    try:
        left = client.containers.list(all=True, filters={"label": LOCAL_LABEL})
        assert [c for c in left if c.status != "running"] == []
    finally:
        client.close()
