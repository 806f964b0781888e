"""Every pipelines/*.py compiles with the real KFP compiler to its golden IR YAML.

Regenerate after a reviewed change: ``make goldens``.
"""

import importlib.util
from pathlib import Path
from types import ModuleType

import _golden
import pytest

pytest.importorskip("kfp")

REPO = Path(__file__).resolve().parents[2]
PIPELINES = sorted((REPO / "pipelines").glob("*.py"))
GOLDEN = Path(__file__).parent / "golden"


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"pipeline_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_text(path: Path, tmp_path: Path) -> str:
    from kfp import compiler

    out = tmp_path / f"{path.stem}.yaml"
    compiler.Compiler().compile(getattr(load(path), path.stem), str(out))
    return out.read_text()


def test_every_pipeline_has_a_golden_file() -> None:
    assert {p.stem for p in PIPELINES} >= {"torchx_training", "torchx_echo"}
    if not _golden.REGENERATE:
        assert {g.stem for g in GOLDEN.glob("*.yaml")} == {p.stem for p in PIPELINES}


@pytest.mark.parametrize("path", PIPELINES, ids=[p.stem for p in PIPELINES])
def test_pipeline_compiles_to_golden(path: Path, tmp_path: Path) -> None:
    text = compile_text(path, tmp_path)
    golden = GOLDEN / f"{path.stem}.yaml"
    _golden.check_golden(golden, text)


def _container_strings(ir: dict) -> list[str]:
    out: list[str] = []
    for executor in ir["deploymentSpec"]["executors"].values():
        container = executor.get("container", {})
        out += [*container.get("command", []), *container.get("args", [])]
    return out


@pytest.mark.parametrize("path", PIPELINES, ids=[p.stem for p in PIPELINES])
def test_golden_ir_holds_only_placeholders_the_backend_resolves(path: Path) -> None:
    """No Concat and no run/task-id placeholder in any container's command or args."""
    import yaml

    ir = next(yaml.safe_load_all((GOLDEN / f"{path.stem}.yaml").read_text()))
    strings = _container_strings(ir)
    assert strings
    for text in strings:
        assert '{"Concat"' not in text, text
        for run_placeholder in ("pipeline_job_uuid}}", "pipeline_task_uuid}}", "task_name}}"):
            assert "{{$." + run_placeholder not in text, text


def test_compiling_with_loglevel_set_leaves_the_ir_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiling machine's environment (LOGLEVEL, read by dist.ddp) stays out of the IR."""
    monkeypatch.setenv("LOGLEVEL", "DEBUG")
    monkeypatch.setenv("TORCHX_TRACKING_EXPERIMENT_NAME", "from-this-machine")
    path = REPO / "pipelines" / "torchx_training.py"
    text = compile_text(path, tmp_path)
    assert "DEBUG" not in text and "from-this-machine" not in text
    assert text == (GOLDEN / "torchx_training.yaml").read_text()


def test_launcher_of_a_component_function_leaves_loglevel_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A component function is materialized when the pipeline compiles: without this env."""
    from kfp import dsl

    from torchx.components.dist import ddp
    from torchx_kfp import launcher_from_app

    monkeypatch.setenv("LOGLEVEL", "DEBUG")

    @dsl.pipeline(name="fn-launcher")
    def fn_launcher() -> None:
        launcher_from_app(ddp, ["-j", "1x2", "--script", "train.py"])

    from _kfp_support import compile_ir

    ir, _ = compile_ir(fn_launcher, tmp_path)
    app = ir["root"]["dag"]["tasks"]["torchx-launch"]["inputs"]["parameters"]["app"]
    text = app["runtimeValue"]["constant"]
    assert '"LOGLEVEL": "WARNING"' in text and "DEBUG" not in text


def test_training_pipeline_shape(tmp_path: Path) -> None:
    import yaml

    docs = list(yaml.safe_load_all(compile_text(REPO / "pipelines/torchx_training.py", tmp_path)))
    ir, platform = docs
    tasks = ir["root"]["dag"]["tasks"]
    assert set(tasks) == {"prepare-data", "train", "evaluate"}
    assert tasks["train"]["dependentTasks"] == ["prepare-data"]
    assert tasks["train"]["inputs"]["parameters"]["parent_run_id"] == {
        "taskOutputParameter": {
            "outputParameterKey": "tracker_run_id",
            "producerTask": "prepare-data",
        }
    }
    train = ir["deploymentSpec"]["executors"]["exec-train"]["container"]
    assert train["resources"]["resourceMemoryLimit"] == "2048M"  # cpu.small
    assert "--nproc_per_node 2" in train["args"][1]
    k8s = platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]["exec-train"]
    assert k8s["emptyDirMounts"][0]["mountPath"] == "/dev/shm"
