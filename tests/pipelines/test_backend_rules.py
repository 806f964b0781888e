"""Every example pipeline runs under the KFP backend's run-time rules (tests/_kfp_backend*.py).

Each container task runs in a container on the local Docker engine with exactly the argv the
open-source backend would give it; a task left with ``{{$.`` or ``{"Concat"`` fails. A hand-made
Concat component shows the harness is stricter than kfp.local.
"""

import importlib.util
import json
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("kfp")
pytest.importorskip("docker")

REPO = Path(__file__).resolve().parents[2]
BUSYBOX = "torchx-flow/busybox:latest"

pytestmark = pytest.mark.docker


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"pipeline_rules_{name}", REPO / "pipelines" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def need_image(client: Any, image: str) -> None:
    import docker
    from _infra import missing

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        missing(image, f"{image} is not built (scripts/infra/up.sh, scripts/infra/torch-image.sh)")


def run_ir(pipeline: Any, tmp_path: Path, client: Any, args: dict, **kw: Any) -> Any:
    from _kfp_backend_run import BackendRun
    from _kfp_support import compile_ir

    tmp_path.mkdir(parents=True, exist_ok=True)
    ir, platform = compile_ir(pipeline, tmp_path)
    run = BackendRun(ir, client, tmp_path / "run", platform=platform, **kw)
    return run, run.run(args)


def test_echo_pipeline_gets_run_ids_from_task_inputs(tmp_path: Path, client: Any) -> None:
    need_image(client, BUSYBOX)
    run, results = run_ir(load("torchx_echo").torchx_echo, tmp_path, client, {"msg": "hi 50"})
    (echo,) = results.values()
    assert echo.logs.strip() == "hi 50"
    ctx = run.ctx
    assert echo.parameters["tracker_run_id"] == f"kfp://{ctx.run_id}/echo-{ctx.dag_execution_id}"
    assert echo.parameters["app_id"] == f"echo-{ctx.dag_execution_id}"


def _concat_pipeline() -> Any:
    from kfp import dsl

    @dsl.container_component
    def concat_echo(msg: str) -> dsl.ContainerSpec:
        return dsl.ContainerSpec(
            image=BUSYBOX, command=["echo"], args=[dsl.ConcatPlaceholder(["msg=", msg])]
        )

    @dsl.pipeline(name="concat-echo")
    def concat(msg: str = "x") -> None:
        concat_echo(msg=msg)

    return concat


def test_concat_placeholder_fails_here_and_passes_under_kfp_local(
    tmp_path: Path, client: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    from _kfp_backend import BackendRuleError
    from kfp import local

    from torchx_kfp.local import venv_docker_runner

    need_image(client, BUSYBOX)
    with pytest.raises(BackendRuleError, match='unresolved placeholders: {"Concat"'):
        run_ir(_concat_pipeline(), tmp_path, client, {"msg": "from-rules"})
    local.init(runner=venv_docker_runner(), pipeline_root=str(tmp_path / "local"))
    _concat_pipeline()(msg="from-kfp-local")
    assert "msg=from-kfp-local" in capfd.readouterr().out


def _assert_lineage(tracker_dir: Path, train_app_id: str) -> None:
    from torchx.tracker.backend.fsspec import create

    tracker = create(str(tracker_dir))
    runs = list(tracker.run_ids())
    train = next(r for r in runs if r.endswith(f"/{train_app_id}"))
    evaluate = next(r for r in runs if "/evaluate-" in r)
    assert [s.source_run_id for s in tracker.sources(evaluate)] == [train]
    (prepare,) = [s.source_run_id for s in tracker.sources(train)]
    assert "prepare" in prepare


@pytest.mark.slow
def test_training_pipeline_under_backend_rules(tmp_path: Path, client: Any) -> None:
    from docker.types import Mount

    module = load("torchx_training")
    need_image(client, module.IMAGE)
    shared = tmp_path / "shared"  # a volume every task mounts (the tracker's store)
    shared.mkdir()
    run, results = run_ir(
        module.torchx_training,
        tmp_path,
        client,
        {"steps": 10.0, "tracker_dir": "/shared/tracker"},  # numbers arrive as doubles
        mounts=[Mount("/shared", str(shared), type="bind")],
    )
    train_app_id = results["train"].parameters["app_id"]
    assert train_app_id == f"train-{run.ctx.dag_execution_id}"
    assert "TORCHX_KFP_INPUT_STEPS=10" in results["train"].argv  # rendered as the driver does
    model = run.host_path(results["train"].artifacts["model"]["uri"])
    assert list(model.rglob("model.pt"))
    metrics = run.host_path(results["evaluate"].artifacts["metrics"]["uri"])
    found = metrics if metrics.is_file() else next(metrics.rglob("*.json"))
    assert json.loads(found.read_text())["mse"] >= 0
    _assert_lineage(shared / "tracker", train_app_id)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    ["torchx_training_launcher", "torchx_training_workflow"],
)
def test_launcher_pipelines_under_backend_rules(name: str, tmp_path: Path, client: Any) -> None:
    """Launcher tasks run in their image too, the app on local_cwd inside that container."""
    from _kfp_backend import BackendRuleError
    from docker.types import Mount

    module = load(name)
    pipeline = getattr(module, name)
    shared = tmp_path / "shared"  # a volume for pipelines that name no claim
    shared.mkdir()
    inputs = set(pipeline.component_spec.inputs or {})
    args: dict[str, Any] = {"steps": "10" if name.endswith("launcher") else 10.0}
    if "pvc" not in inputs:  # no claim: workdir and tracker on a volume every task mounts
        args.update(workdir="/shared/work")
        if "tracker_dir" in inputs:
            args.update(tracker_dir="/shared/tracker")
    try:
        run, results = run_ir(
            pipeline, tmp_path, client, args, mounts=[Mount("/shared", str(shared), type="bind")]
        )
    except BackendRuleError as err:
        pytest.fail(str(err)[-2000:])
    data = run.root / "pvc" / run.params["pvc"] if "pvc" in inputs else shared
    assert list(data.rglob("model.pt"))
    if "tracker_dir" not in inputs:  # the workflow: no tracker, data as KFP artifacts
        _assert_workflow_artifacts(run, results, data)
        return
    train = next(r for k, r in results.items() if "train" in k or k.endswith("-2"))
    metrics = [p for p in data.rglob("*metrics*") if p.is_file()]
    assert metrics and json.loads(metrics[0].read_text())["mse"] >= 0
    _assert_lineage(data / "tracker", train.parameters["app_id"])


def _assert_workflow_artifacts(run: Any, results: Mapping[str, Any], data: Path) -> None:
    """The workflow's dataset (prepare, a container task), checkpoint (train, a launcher task)
    and metrics (evaluate) are KFP artifacts; evaluate reads the first two as input artifacts."""
    by_name = {name: r for r in results.values() for name in r.artifacts}
    prepare, train, evaluate = (by_name[n] for n in ("dataset", "checkpoint", "metrics"))

    def local(result: Any, name: str) -> str:  # the artifact's path inside the tasks
        return str(result.artifacts[name]["uri"]).replace("minio://", "/minio/", 1)

    def arg(flag: str) -> str:
        return str(evaluate.argv[evaluate.argv.index(flag) + 1])

    dataset = run.host_path(prepare.artifacts["dataset"]["uri"])
    assert dataset.is_file() and json.loads(dataset.read_text())["seed"] == 0
    # the launcher task copied the checkpoint its app (local_cwd, in its container) wrote
    (written,) = data.rglob(f"out/{train.parameters['app_id']}/model.pt")
    model = run.host_path(train.artifacts["checkpoint"]["uri"])
    assert model.is_file() and model.read_bytes() == written.read_bytes()
    assert train.artifacts["checkpoint"]["type"]["schemaTitle"] == "system.Model"
    assert (arg("--data"), arg("--checkpoint")) == (
        local(prepare, "dataset"),
        local(train, "checkpoint"),
    )
    assert f"evaluated {local(train, 'checkpoint')} (trained 10 steps): mse" in evaluate.logs
    metrics = json.loads(run.host_path(evaluate.artifacts["metrics"]["uri"]).read_text())
    assert metrics["checkpoint"] == local(train, "checkpoint") and metrics["mse"] >= 0
    (on_volume,) = data.rglob("metrics/*.json")  # also the declared path, on the volume
    assert json.loads(on_volume.read_text()) == metrics


TORCH_IMAGE = "torchx-flow/torch:2.13.0"


HARD = 'say "hi" \\ C:\\tmp\\n\nline two {{ x }} {{torchx-kfp:0}}'
"""A run-time value a JSON string, a shell, a template or a marker could trip over."""
LITERAL = "{{torchx-kfp:1}} {{torchx-kfp:e}}"
"""A constant that looks like a marker: it must not be filled."""


def _hard_values_pipeline() -> Any:
    """A launcher task whose channels sit inside list, dict and f-string inputs."""
    from kfp import dsl

    from torchx_kfp import launcher_from_app

    @dsl.pipeline(name="hard-values")
    def hard_values(x: str = "plain", n: int = 3) -> None:
        launcher_from_app(
            "utils.sh",
            ["sh", "-c", 'printf "%s|%s|%s|%s|%s\\n" "$0" "$V" "$N" "$W" "$L"', f"<{x}>"],
            env={"V": x, "N": f"{n}", "W": f"{x}={n}", "L": LITERAL},
            launcher_image=TORCH_IMAGE,
        )

    return hard_values


def _hard_expected(x: str, n: int) -> str:
    return f"<{x}>|{x}|{n}|{x}={n}|{LITERAL}"


@pytest.mark.slow
def test_launcher_values_with_quotes_backslashes_newlines_and_braces_survive(
    tmp_path: Path, client: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    """Channels inside a launcher task's list, dict and f-string inputs are inputs of their
    own (a marker in the constant): a value with ``"``, ``\\``, a newline or ``{{`` reaches
    the app intact, under the backend's rules and under kfp.local (where a channel embedded
    in the constant broke the ``{{$}}`` JSON)."""
    from kfp import local

    need_image(client, TORCH_IMAGE)
    _, results = run_ir(_hard_values_pipeline(), tmp_path / "rules", client, {"x": HARD, "n": 7})
    (task,) = results.values()
    lines = [line.split("] ", 1)[-1] for line in task.logs.splitlines() if "[sh/0]" in line]
    assert "\n".join(lines) == _hard_expected(HARD, 7)
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(tmp_path / "l"))
    capfd.readouterr()
    _hard_values_pipeline()(x=HARD, n=7)
    out = capfd.readouterr().out
    lines = [line.split("] ", 1)[-1] for line in out.splitlines() if "[sh/0]" in line]
    assert "\n".join(lines) == _hard_expected(HARD, 7)
