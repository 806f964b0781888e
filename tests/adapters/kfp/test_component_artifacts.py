"""Container tasks hand data over KFP artifacts: ``outputs=``, ``output_path`` and upstream
artifacts in ``component_args`` (compiled with the real KFP compiler)."""

from pathlib import Path

import pytest

pytest.importorskip("kfp")

from _kfp_support import compile_ir, executor
from kfp import dsl
from kfp.dsl import Dataset, Metrics, Model

from torchx_kfp import container_from_app, output_path

PY = ["--script", "s.py", "--"]


def _two_steps() -> object:
    @dsl.pipeline
    def p(steps: int = 5) -> None:
        prep = container_from_app(
            "utils.python",
            ["--name", "prep", *PY, "--out", output_path("data")],
            outputs={"data": Dataset},
            image="img",
        )
        train = container_from_app(
            "dist.ddp",
            ["-j", "1x2", "--name", "train", *PY, "--steps", steps]
            + ["--data", f"{prep.outputs['data']}/d.json", "--out", output_path("model")],
            outputs={"model": Model},
            image="img",
        )
        container_from_app(
            "utils.python",
            ["--name", "ev", *PY, "--ckpt", f"{train.outputs['model']}/m.pt"]
            + ["--metrics", output_path("metrics")],
            outputs={"metrics": Metrics},
            image="img",
        )

    return p


def test_output_and_input_artifacts_compile(tmp_path: Path) -> None:
    ir, _ = compile_ir(_two_steps(), tmp_path)
    comps = ir["components"]
    data = comps["comp-prep"]["outputDefinitions"]["artifacts"]["data"]["artifactType"]
    assert data["schemaTitle"] == "system.Dataset"
    assert "output_data" not in comps["comp-prep"]["inputDefinitions"]["parameters"]
    assert executor(ir, "prep")["args"][-1] == "{{$.outputs.artifacts['data'].path}}"
    ev_in = comps["comp-ev"]["inputDefinitions"]["artifacts"]["train_model"]["artifactType"]
    assert ev_in["schemaTitle"] == "system.Model"
    assert "{{$.inputs.artifacts['train_model'].path}}/m.pt" in executor(ir, "ev")["args"]
    wired = ir["root"]["dag"]["tasks"]["ev"]["inputs"]["artifacts"]["train_model"]
    assert wired == {"taskOutputArtifact": {"outputArtifactKey": "model", "producerTask": "train"}}
    metrics = comps["comp-ev"]["outputDefinitions"]["artifacts"]["metrics"]["artifactType"]
    assert metrics["schemaTitle"] == "system.Metrics"


def test_artifact_paths_in_a_shell_script_are_exported_variables(tmp_path: Path) -> None:
    """dist.ddp runs ``sh -c <script>``: an artifact path reaches it as a variable, not code."""
    ir, _ = compile_ir(_two_steps(), tmp_path)
    c = executor(ir, "train")
    assert "TORCHX_KFP_INPUT_OUTPUT_MODEL={{$.outputs.artifacts['model'].path}}" in c["command"]
    assert "TORCHX_KFP_INPUT_PREP_DATA={{$.inputs.artifacts['prep_data'].path}}" in c["command"]
    script = next(a for a in c["args"] if "torchrun" in a)
    assert '"${TORCHX_KFP_INPUT_OUTPUT_MODEL}"' in script
    assert "{{$" not in script  # no placeholder inside the shell code
    inputs = ir["components"]["comp-train"]["inputDefinitions"]
    assert set(inputs["artifacts"]) == {"prep_data"}
    assert "steps" in inputs["parameters"]


def _compile_one(tmp_path: Path, **kwargs: object) -> None:
    @dsl.pipeline
    def p() -> None:
        container_from_app(
            "utils.echo", image="img", **{"component_args": ["--msg", "m"], **kwargs}
        )

    compile_ir(p, tmp_path)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"component_args": ["--msg", output_path("model")]},
            ValueError,
            r"output_path\('model'\).*outputs= does not declare it",
        ),
        ({"outputs": {"m": int}}, TypeError, "not a KFP artifact class"),
        ({"outputs": {"app_id": Model}}, ValueError, "clashes with the component's own"),
        ({"outputs": {"bad-name": Model}}, ValueError, "must be a Python identifier"),
    ],
)
def test_bad_artifact_declarations(tmp_path: Path, kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        _compile_one(tmp_path, **kwargs)


def test_artifact_in_env_is_refused(tmp_path: Path) -> None:
    def p() -> None:
        prep = container_from_app(
            "utils.echo", ["--msg", output_path("d")], image="img", outputs={"d": Dataset}
        )
        container_from_app("utils.echo", image="img", env={"DATA": prep.outputs["d"]})

    with pytest.raises(ValueError, match="env `DATA` is an artifact"):
        compile_ir(dsl.pipeline(p), tmp_path)


def test_an_output_copied_from_a_path_the_app_writes(tmp_path: Path) -> None:
    """``outputs={name: (type, path)}``: the path (with a pipeline input) becomes an input;
    the task copies it into the artifact after the app succeeded."""

    @dsl.pipeline
    def p(workdir: str = "/w") -> None:
        container_from_app(
            "utils.python",
            ["--name", "prep", *PY, "--out", f"{workdir}/data"],
            outputs={"data": (Dataset, f"{workdir}/data/d.json")},
            image="img",
        )

    ir, _ = compile_ir(p, tmp_path)
    command = executor(ir, "prep")["command"]
    assert "cp -R" in command[2] and 'exec "$@"' not in command[2]
    start = command.index("--") + 1
    assert command[start : start + 3] == [
        "{{$.inputs.parameters['workdir']}}/data/d.json",
        "{{$.outputs.artifacts['data'].path}}",
        "--",
    ]
    comp = ir["components"]["comp-prep"]
    assert "workdir" in comp["inputDefinitions"]["parameters"]
    assert comp["outputDefinitions"]["artifacts"]["data"]["artifactType"]["schemaTitle"] == (
        "system.Dataset"
    )


def test_a_copied_output_needs_a_type_and_a_path() -> None:
    from torchx_kfp import component_from_app

    with pytest.raises(ValueError, match=r"outputs\['data'\] must be an artifact type or"):
        component_from_app("utils.echo", outputs={"data": (Dataset,)})
