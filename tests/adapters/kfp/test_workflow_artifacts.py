"""Workflow step outputs as KFP artifacts (``Step.artifacts``), compiled and run.

A container step's declared output with an artifact kind is an output artifact of its task,
copied from the declared path once the app succeeded; a downstream container step gets it
as an input artifact (its local path in the args). Run under the backend-rules runner and
under kfp.local (DockerRunner), both on busybox.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kfp", reason="kfp is not installed (pip install -e '.[kfp]')")
pytest.importorskip("pydantic", reason="pydantic is not installed (pip install -e '.[workflow]')")

from _kfp_support import compile_ir, executor

from torchx.workflow import Pipeline, Step, validate_pipeline
from torchx_kfp import pipeline_from_workflow

BUSYBOX = "torchx-flow/busybox:latest"
WRITE = 'mkdir -p "$(dirname "$1")" && echo "made by $TORCHX_JOB_ID" > "$1"'


def _pipeline(kind: str = "Dataset", launcher: bool = False) -> Pipeline:
    """``make`` writes x, ``use`` prints it; with ``launcher``, ``make`` is a launcher task
    (its resource names a parameter) running the app on local_cwd inside the task."""
    make = {"resource": "{{ params.res }}", "scheduler": "local_cwd"} if launcher else {}
    return validate_pipeline(
        Pipeline(
            name="handover",
            params={"workdir": "/tmp/handover", "res": "cpu.small"},
            defaults={"image": BUSYBOX},
            steps={
                "make": Step(
                    component="utils.sh",
                    args=["sh", "-c", WRITE, "sh", "{{ params.workdir }}/${app_id}/x.txt"],
                    outputs={"x": "{{ params.workdir }}/{{ steps.make.app_id }}/x.txt"},
                    artifacts={"x": kind},
                    **make,
                ),
                "use": Step(component="utils.sh", args=["cat", "{{ steps.make.outputs.x }}"]),
            },
        )
    )


@pytest.fixture
def client() -> Any:
    from _infra import docker_host, missing

    host, why = docker_host()
    if host is None:
        missing("a Docker engine", why)
    import docker

    c = docker.DockerClient(base_url=host)
    yield c
    c.close()


def _by_name(ir: dict) -> dict[str, tuple[str, dict]]:
    return {t["taskInfo"]["name"]: (k, t) for k, t in ir["root"]["dag"]["tasks"].items()}


def test_declared_output_is_an_output_artifact_and_a_downstream_input_artifact(
    tmp_path: Path,
) -> None:
    ir, _ = compile_ir(pipeline_from_workflow(_pipeline("Model")), tmp_path)
    tasks = _by_name(ir)
    make_key, make = tasks["make"]
    comp = ir["components"][make["componentRef"]["name"]]
    art = comp["outputDefinitions"]["artifacts"]["x"]["artifactType"]
    assert art["schemaTitle"] == "system.Model"
    command = executor(ir, make_key)["command"]
    pair = command[command.index("--") + 1 : command.index("--") + 3]
    task_id = "{{$.inputs.parameters['pipeline_task_name']}}-"
    task_id += "{{$.inputs.parameters['pipeline_task_uuid']}}"
    # the declared path, rendered like the app's ${app_id}, copied to the artifact's path
    assert pair == [
        "{{$.inputs.parameters['workdir']}}/" + task_id + "/x.txt",
        "{{$.outputs.artifacts['x'].path}}",
    ]
    # the app's ${app_id} in its sh -c script: the same inputs, exported by the wrapper
    ids = '"${TORCHX_KFP_INPUT_PIPELINE_TASK_NAME}"\'-\'"${TORCHX_KFP_INPUT_PIPELINE_TASK_UUID}"'
    assert ids + "'/x.txt" in executor(ir, make_key)["args"][-1]
    use_key, use = tasks["use"]
    (name, spec) = next(iter(use["inputs"]["artifacts"].items()))
    assert spec["taskOutputArtifact"] == {"outputArtifactKey": "x", "producerTask": make_key}
    path = "{{$.inputs.artifacts['" + name + "'].path}}"
    assert any(e.endswith("=" + path) for e in executor(ir, use_key)["command"])


def test_artifacts_must_name_declared_outputs() -> None:
    with pytest.raises(ValueError, match="`artifacts` names `y`, which is not a declared output"):
        Step(component="utils.echo", outputs={"x": "/a"}, artifacts={"y": "Model"})
    with pytest.raises(ValueError, match="artifacts"):
        Step(component="utils.echo", outputs={"x": "/a"}, artifacts={"x": "Parquet"})


def test_launcher_tasks_get_the_pipeline_without_artifact_kinds(tmp_path: Path) -> None:
    """A launcher step renders declared outputs as paths; the kinds stay out of its JSON."""
    ir, _ = compile_ir(pipeline_from_workflow(_pipeline(), mode="launcher"), tmp_path)
    _, make = _by_name(ir)["make"]
    data = json.loads(make["inputs"]["parameters"]["pipeline"]["runtimeValue"]["constant"])
    assert data["steps"]["make"]["outputs"] == {"x": _pipeline().steps["make"].outputs["x"]}
    assert "artifacts" not in data["steps"]["make"]


@pytest.mark.docker
def test_handover_under_backend_rules(tmp_path: Path, client: Any) -> None:
    from _kfp_backend_run import BackendRun

    ir, platform = compile_ir(pipeline_from_workflow(_pipeline()), tmp_path)
    run = BackendRun(ir, client, tmp_path / "run", platform=platform)
    results = run.run({})
    make = next(r for r in results.values() if "x" in r.artifacts)
    use = next(r for r in results.values() if r is not make)
    assert run.host_path(make.artifacts["x"]["uri"]).read_text().startswith("made by kfp://")
    assert use.logs.strip() == f"made by {make.parameters['tracker_run_id']}"


@pytest.mark.docker
def test_handover_under_kfp_local(
    tmp_path: Path, client: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    from kfp import local

    from torchx_kfp.local import venv_docker_runner

    local.init(runner=venv_docker_runner(), pipeline_root=str(tmp_path / "root"))
    pipeline_from_workflow(_pipeline())()
    (written,) = (tmp_path / "root").glob("*/*/x")
    assert written.read_text().startswith("made by kfp://")
    assert written.read_text() in capfd.readouterr().out


@pytest.mark.docker
def test_a_task_that_ends_at_once_keeps_its_logs_and_its_failure(
    tmp_path: Path, client: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    """kfp.local alone loses both when the container is gone before it reads them."""
    from kfp import local

    from torchx_kfp.local import LOCAL_LABEL, venv_docker_runner

    step = Step(component="utils.sh", args=["sh", "-c", "echo quick-bye; exit 3"])
    quick = validate_pipeline(
        Pipeline(name="quick", defaults={"image": BUSYBOX}, steps={"quick": step})
    )
    pipeline = pipeline_from_workflow(quick)
    local.init(runner=venv_docker_runner(), pipeline_root=str(tmp_path / "root"))
    for _ in range(3):
        with pytest.raises(RuntimeError, match="FAILURE"):
            pipeline()
        assert "quick-bye" in capfd.readouterr().out
    assert not client.containers.list(all=True, filters={"label": LOCAL_LABEL})


@pytest.mark.docker
def test_copy_wrapper_forwards_sigterm_and_copies_only_after_success(
    tmp_path: Path, client: Any
) -> None:
    """``docker stop`` (SIGTERM to PID 1, the wrapper) reaches the app; nothing is copied."""
    from torchx_kfp._compile.spec import WRAPPER_COPY

    app = 'trap "echo got-term; exit 7" TERM; echo started; sleep 60 & wait'
    argv = ["sh", "-c", WRAPPER_COPY, "torchx-kfp", "/tmp/o/id", "/tmp/o/run", "TORCHX_JOB_ID=j"]
    argv += ["--", "/tmp/src", "/out/dst", "--", "sh", "-c", app]
    out = tmp_path / "out"
    out.mkdir()
    container = client.containers.run(
        BUSYBOX, argv, detach=True, volumes={str(out): {"bind": "/out", "mode": "rw"}}
    )
    try:
        deadline = time.monotonic() + 30
        while b"started" not in container.logs() and time.monotonic() < deadline:
            time.sleep(0.1)
        container.stop(timeout=20)
        status: Any = container.wait(timeout=30)
        assert status["StatusCode"] == 7, container.logs()
        assert b"got-term" in container.logs()
        assert not (out / "dst").exists()
    finally:
        container.remove(force=True)


@pytest.mark.docker
def test_copy_wrapper_reports_the_apps_status_when_sigterm_races_its_exit(client: Any) -> None:
    """A SIGTERM that ends the wrapper's ``wait`` as the app exits still yields the app's status.

    100 rounds in one container, each signalling the wrapper 0-1.8 ms after the app set its
    trap: the wrapper must wait again for the status the shell kept (it exited 143, the
    interrupted ``wait``'s status, in about half the rounds before that was fixed).
    """
    import shlex

    from torchx_kfp._compile.spec import WRAPPER_COPY

    app = 'trap "exit 7" TERM; touch /tmp/started; sleep 60 & wait'
    argv = ["sh", "-c", WRAPPER_COPY, "torchx-kfp", "/tmp/o/id", "/tmp/o/run", "TORCHX_JOB_ID=j"]
    argv += ["--", "/tmp/src", "/tmp/dst", "--", "sh", "-c", app]
    wrapper = " ".join(shlex.quote(a) for a in argv)
    rounds = (
        "i=0; while [ $i -lt 100 ]; do rm -f /tmp/started; "
        f"{wrapper} & w=$!; "
        "while [ ! -e /tmp/started ]; do usleep 500; done; usleep $(( (i % 7) * 300 )); "
        'kill -TERM $w; rc=0; wait $w || rc=$?; echo "rc=$rc"; i=$((i + 1)); done'
    )
    logs = client.containers.run(BUSYBOX, ["sh", "-c", rounds], remove=True).decode()
    codes = [line for line in logs.splitlines() if line.startswith("rc=")]
    assert len(codes) == 100 and set(codes) == {"rc=7"}, logs


@pytest.mark.docker
def test_copy_wrapper_copies_a_directory_and_refuses_a_missing_path(
    tmp_path: Path, client: Any
) -> None:
    from torchx_kfp._compile.spec import WRAPPER_COPY

    def run(app: str) -> tuple[int, str]:
        argv = ["sh", "-c", WRAPPER_COPY, "torchx-kfp", "/tmp/o/id", "/tmp/o/run", "--"]
        argv += ["/tmp/src dir", "/out/a/dst", "--", "sh", "-c", app]
        c = client.containers.run(
            BUSYBOX, argv, detach=True, volumes={str(tmp_path): {"bind": "/out", "mode": "rw"}}
        )
        try:
            return c.wait(timeout=30)["StatusCode"], c.logs().decode()
        finally:
            c.remove(force=True)

    code, logs = run('mkdir -p "/tmp/src dir/sub" && echo hi > "/tmp/src dir/sub/f"')
    assert code == 0, logs
    assert (tmp_path / "a" / "dst" / "sub" / "f").read_text() == "hi\n"
    code, logs = run("true")
    assert code == 1 and "the app did not write /tmp/src dir (declared output)" in logs
    code, logs = run("exit 3")
    assert code == 3


TORCH_IMAGE = "torchx-flow/torch:2.13.0"


def test_a_launcher_step_output_is_an_output_artifact_of_its_task(tmp_path: Path) -> None:
    pipeline = pipeline_from_workflow(_pipeline("Model", launcher=True))
    ir, _ = compile_ir(pipeline, tmp_path)
    tasks = _by_name(ir)
    make_key, make = tasks["make"]
    comp = ir["components"][make["componentRef"]["name"]]
    assert "torchx-workflow-step" in make["componentRef"]["name"]
    art = comp["outputDefinitions"]["artifacts"]["x"]["artifactType"]
    assert art["schemaTitle"] == "system.Model"
    assert set(comp["outputDefinitions"]["parameters"]) == {
        "app_handle",
        "app_id",
        "tracker_run_id",
    }
    _, use = tasks["use"]
    (spec,) = use["inputs"]["artifacts"].values()
    assert spec["taskOutputArtifact"] == {"outputArtifactKey": "x", "producerTask": make_key}


def test_a_launcher_step_artifact_needs_an_identifier_name() -> None:
    p = _pipeline(launcher=True)
    make = p.steps["make"].model_copy(
        update={"outputs": {"x-y": "/tmp/a"}, "artifacts": {"x-y": "Dataset"}}
    )
    bad = p.model_copy(update={"steps": {"make": make}})
    with pytest.raises(ValueError, match="output artifact `x-y` of a launcher task needs a Python"):
        pipeline_from_workflow(bad)


@pytest.mark.docker
@pytest.mark.slow
def test_launcher_step_handover_under_backend_rules(tmp_path: Path, client: Any) -> None:
    """The launcher task copies what its app wrote to its output artifact once the app
    SUCCEEDED; the downstream container task reads it as an input artifact."""
    from _kfp_backend_run import BackendRun

    pipeline = pipeline_from_workflow(_pipeline(launcher=True), launcher_image=TORCH_IMAGE)
    ir, platform = compile_ir(pipeline, tmp_path)
    run = BackendRun(ir, client, tmp_path / "run", platform=platform)
    results = run.run({})
    make = next(r for r in results.values() if "x" in r.artifacts)
    use = next(r for r in results.values() if r is not make)
    written = run.host_path(make.artifacts["x"]["uri"]).read_text()
    assert written == f"made by {make.parameters['app_handle']}\n"
    assert written.startswith("made by local_cwd://")
    assert use.logs == written


@pytest.mark.docker
@pytest.mark.slow
def test_launcher_step_handover_under_kfp_local(
    tmp_path: Path, client: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    from kfp import local

    from torchx_kfp.local import venv_docker_runner

    repo = str(Path(__file__).resolve().parents[3])  # the venv's editable install points here
    runner = venv_docker_runner(read_only=[repo])
    local.init(runner=runner, pipeline_root=str(tmp_path / "root"))
    pipeline_from_workflow(_pipeline(launcher=True), launcher_image=TORCH_IMAGE)()
    (written,) = (tmp_path / "root").glob("*/*/x")
    assert written.read_text().startswith("made by local_cwd://")
    assert written.read_text() in capfd.readouterr().out
