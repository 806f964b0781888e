"""The launcher task's pod: its options in the IR, and a process chain that SIGTERM reaches."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("kfp")

from _kfp_launcher import launcher_argv
from _kfp_support import compile_ir, executor, k8s_executor
from kfp import dsl

import torchx.specs as specs
from torchx_kfp import launcher_component, launcher_from_app
from torchx_kfp._appjson import app_to_json
from torchx_kfp._in_task.launch import launch


def test_launcher_pod_options_compile(tmp_path: Path) -> None:
    @dsl.pipeline
    def p(sa: str = "trainer") -> None:
        launcher_from_app(
            "dist.ddp",
            ["-j", "2x1", "--script", "train.py"],
            scheduler="kubernetes",
            launcher_resource="cpu.small",
            secrets={"mlflow-creds": {"token": "MLFLOW_TRACKING_TOKEN"}},
            node_selector={"pool": "cpu"},
            tolerations=[{"key": "batch", "operator": "Exists", "effect": "NoSchedule"}],
            service_account=sa,
        )

    ir, platform = compile_ir(p, tmp_path)
    res = executor(ir, "torchx-launch")["resources"]
    assert (res["resourceCpuLimit"], res["resourceCpuRequest"]) == ("1000m", "900m")
    assert res["resourceMemoryLimit"] == "2048M"
    k8s = k8s_executor(platform, "torchx-launch")
    assert (
        k8s["secretAsEnv"]
        == [
            {
                "keyToEnv": [{"envVar": "MLFLOW_TRACKING_TOKEN", "secretKey": "token"}],
                "secretName": "mlflow-creds",
                "secretNameParameter": {"runtimeValue": {"constant": "mlflow-creds"}},
            }
        ]
        or k8s["secretAsEnv"][0]["secretName"] == "mlflow-creds"
    )
    assert k8s["nodeSelector"]["labels"] == {"pool": "cpu"}
    assert k8s["tolerations"][0]["key"] == "batch"
    inputs = ir["root"]["dag"]["tasks"]["torchx-launch"]["inputs"]["parameters"]
    assert inputs["secret_env"]["runtimeValue"]["constant"] == ["MLFLOW_TRACKING_TOKEN"]
    assert inputs["service_account"]["componentInputParameter"] == "sa"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"launcher_resource": "aws_p4d.24xlarge"}, "has GPUs or devices"),
        ({"secrets": {"creds": "token"}}, r"secrets\['creds'\] must map secret keys"),
        ({"tolerations": [{"key": "a", "efect": "NoSchedule"}]}, "did you mean `effect`"),
    ],
)
def test_bad_launcher_pod_options(tmp_path: Path, kwargs: dict, match: str) -> None:
    def p() -> None:
        launcher_from_app("utils.echo", **kwargs)

    with pytest.raises(ValueError, match=match):
        compile_ir(dsl.pipeline(p), tmp_path)


@pytest.mark.parametrize("packages", [None, ["torchx-flow"]])
def test_the_task_execs_into_python(packages: list[str] | None) -> None:
    """No shell stays between the container's PID 1 and the launcher (SIGTERM reaches it)."""
    command = launcher_component(packages_to_install=packages).component_spec
    text = "\n".join(command.implementation.container.command)
    assert "exec python3 -m kfp.dsl.executor_main" in text
    if packages:
        assert 'exec "$0" "$@"' in text


def _sleeper() -> str:
    role = specs.Role(name="sleeper", image="", entrypoint="sleep", args=["60"])
    return app_to_json(specs.AppDef(name="sleeper", roles=[role]))


def test_sigterm_to_the_task_process_cancels_the_app(tmp_path: Path) -> None:
    """The real chain (``sh -ec`` -> ``exec python3`` -> torchx_launch) gets SIGTERM, cancels."""
    from torchx.runner import get_runner

    values = {"component": "", "args": [], "app": _sleeper(), "overrides": {}, "params": {}}
    argv = launcher_argv(launcher_component(), {**values, "env": {}}, str(tmp_path))
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, text=True, env={**os.environ, "PATH": path}
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        while line and not line.startswith("launched TorchX app "):
            line = proc.stdout.readline()
        handle = line.split()[-1]
        with get_runner() as runner:
            deadline = time.monotonic() + 60
            while runner.status(handle).state.name != "RUNNING":  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "the app never started"
                time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)  # the pid KFP started: the shell, now python
            assert proc.wait(timeout=60) == 143
            status = runner.status(handle)
            assert status is not None and status.state.name == "CANCELLED"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_secret_env_reaches_the_roles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Variables set from secrets in the launcher's env go into every role's env."""
    from torchx_kfp._in_task.launch import _app_env

    monkeypatch.setenv("TX_TEST_TOKEN", "s3cret")
    assert _app_env({"A": "1"}, ["TX_TEST_TOKEN"]) == {"A": "1", "TX_TEST_TOKEN": "s3cret"}
    monkeypatch.delenv("TX_TEST_TOKEN")
    spec = {"component": "utils.echo", "args": [], "app": "", "overrides": {}}
    with pytest.raises(ValueError, match="the launcher's env has no TX_TEST_TOKEN"):
        launch(spec, {}, {}, "local_cwd", secret_env=["TX_TEST_TOKEN"])


def test_pvc_is_mounted_in_the_launcher_and_passed_on(tmp_path: Path) -> None:
    """A claim (here made per run by CreatePVC) reaches the launcher pod and the task's inputs."""
    from kfp import kubernetes

    @dsl.pipeline
    def p() -> None:
        pvc = kubernetes.CreatePVC(
            pvc_name_suffix="-tx", access_modes=["ReadWriteMany"], size="1Gi"
        )
        launcher_from_app("utils.echo", pvc=pvc.outputs["name"], pvc_mount_path="/data")

    ir, platform = compile_ir(p, tmp_path)
    mount = k8s_executor(platform, "torchx-launch")["pvcMount"][0]
    assert mount["mountPath"] == "/data"
    assert mount["pvcNameParameter"]["taskOutputParameter"]["producerTask"] == "createpvc"
    inputs = ir["root"]["dag"]["tasks"]["torchx-launch"]["inputs"]["parameters"]
    assert inputs["pvc_mount_path"]["runtimeValue"]["constant"] == "/data"
    assert inputs["pvc"]["taskOutputParameter"]["producerTask"] == "createpvc"


def test_the_claim_is_mounted_in_every_role_of_a_kubernetes_app() -> None:
    from torchx.runner.launch import LaunchRequest
    from torchx_kfp._in_task.launch import _with_volume

    app = specs.AppDef(
        name="a",
        roles=[specs.Role(name=n, image="img", entrypoint="run") for n in ("x", "y")],
    )
    request = _with_volume(LaunchRequest(app=app), app, ("claim", "/data"))
    assert request.app is not None
    for role in request.app.roles:
        assert role.mounts == [specs.VolumeMount(src="claim", dst_path="/data")]


def test_workflow_pipeline_mounts_the_claim_in_every_task(tmp_path: Path) -> None:
    """pipeline_from_workflow(pvc=...): container and launcher steps share the claim."""
    from torchx.workflow import load_pipeline
    from torchx_kfp import pipeline_from_workflow

    repo = Path(__file__).resolve().parents[3]
    fn = pipeline_from_workflow(
        load_pipeline(repo / "pipelines" / "pipeline.yaml"), pvc="data", pvc_mount_path="/mnt/d"
    )
    ir, platform = compile_ir(fn, tmp_path)
    tasks = ir["root"]["dag"]["tasks"]
    for name, task in tasks.items():
        executor_name = task["componentRef"]["name"].replace("comp-", "")
        mount = k8s_executor(platform, executor_name)["pvcMount"][0]
        assert mount["mountPath"] == "/mnt/d", name
    train = tasks["torchx-workflow-step"]["inputs"]["parameters"]  # launcher: its app mounts it
    assert train["pvc"]["runtimeValue"]["constant"] == "data"
    assert train["pvc_mount_path"]["runtimeValue"]["constant"] == "/mnt/d"
