"""The compile-time check: only placeholders the KFP backend resolves reach what we emit."""

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kfp")

from torchx_kfp._compile.placeholders import (
    check_container,
    check_pipeline_spec,
    unresolved,
)

WRAP = ["sh", "-c", 'exec "$@"', "x"]


def test_resolvable_placeholders_pass() -> None:
    check_container(
        "t",
        [*WRAP, "{{$.outputs.parameters['o'].output_file}}", "--", "python"],
        [
            "--x={{$.inputs.parameters['x']}}/y-{{$.inputs.parameters['x']}}",
            "{{$.outputs.artifacts['model'].path}}",
            "{{$.inputs.artifacts['data'].uri}}",
            '{"IfPresent": {"InputName": "x", "Then": ["--x"]}}',
            "{{$}}",
        ],
        {"A": "plain"},
        ["x", "data"],
        ["o", "model"],
    )


@pytest.mark.parametrize(
    "arg, placeholder",
    [
        ('{"Concat": ["a=", "{{$.inputs.parameters[\'x\']}}"]}', '{"Concat"'),
        ("id={{$.pipeline_task_uuid}}", "{{$.pipeline_task_uuid}}"),
        ("kfp://{{$.pipeline_job_uuid}}/a", "{{$.pipeline_job_uuid}}"),
        ("{{$.inputs.parameters['nope']}}", "{{$.inputs.parameters['nope']}}"),
        ("--a {{$.inputs.parameters", "{{$"),
    ],
)
def test_unresolvable_placeholder_is_refused_naming_task_and_placeholder(
    arg: str, placeholder: str
) -> None:
    assert unresolved(arg, ["x"], []) == [placeholder]
    with pytest.raises(ValueError, match=r"KFP task `train`: args\[1\]") as err:
        check_container("train", WRAP, ["ok", arg], {}, ["x"], [])
    assert placeholder in str(err.value)


def test_placeholder_in_env_or_executable_is_refused() -> None:
    with pytest.raises(ValueError, match="env RUN.*never resolved in env"):
        check_container("t", WRAP, [], {"RUN": "{{$.inputs.parameters['x']}}"}, ["x"])
    with pytest.raises(ValueError, match=r"executable \(command\[0\]\)"):
        check_container("t", ["{{$.inputs.parameters['x']}}"], [], {}, ["x"])


def _ir(constant: Any) -> dict[str, Any]:
    return {
        "components": {"comp-a": {"executorLabel": "exec-a"}},
        "deploymentSpec": {"executors": {"exec-a": {"container": {"command": ["true"]}}}},
        "root": {
            "dag": {
                "tasks": {
                    "a": {
                        "inputs": {
                            "parameters": {
                                "v": {"runtimeValue": {"constant": constant}},
                                "pipelinechannel--p": {"componentInputParameter": "p"},
                            }
                        }
                    }
                }
            }
        },
    }


@pytest.mark.parametrize(
    "constant",
    [
        "{{$.pipeline_job_uuid}}",
        "{{$.pipeline_task_uuid}}",
        ["--x", "{{$.inputs.parameters['pipelinechannel--p']}}/y"],
        {"K": "{{$.inputs.parameters['pipelinechannel--p']}}"},
        "plain",
    ],
)
def test_task_constants_the_backend_resolves(constant: Any) -> None:
    check_pipeline_spec(_ir(constant))


@pytest.mark.parametrize(
    "constant",
    [
        "run-{{$.pipeline_job_uuid}}",  # only the whole constant is replaced
        ["{{$.inputs.parameters['pipelinechannel--other']}}"],  # not an input of the task
        {"K": ["{{$.outputs.parameters['o'].output_file}}"]},
    ],
)
def test_task_constants_left_literal_are_refused(constant: Any) -> None:
    with pytest.raises(ValueError, match="KFP task `a`: input `v` .*literal text"):
        check_pipeline_spec(_ir(constant))


def test_every_component_we_build_is_checked() -> None:
    from torchx.specs import AppDef, Role
    from torchx_kfp import component_from_app

    app = AppDef("bad", roles=[Role("r", image="img", entrypoint="echo", args=["{{$.x}}"])])
    with pytest.raises(ValueError, match=r"KFP task `bad`: args\[0\] .*`\{\{\$\.x\}\}`"):
        component_from_app(app)


def test_golden_pipelines_pass_the_whole_pipeline_check() -> None:
    import yaml

    golden = Path(__file__).resolve().parents[2] / "pipelines" / "golden"
    files = sorted(golden.glob("*.yaml"))
    assert files
    for path in files:
        check_pipeline_spec(next(yaml.safe_load_all(path.read_text())))


def test_artifact_path_in_a_shell_script_becomes_an_exported_variable() -> None:
    """``dist.ddp`` shlex-quotes its args into ``bash -c``; the path reaches it as a variable."""
    import shlex

    from torchx_kfp._compile.shell import rewrite_artifact_paths

    path = "{{$.outputs.artifacts['model'].path}}"
    script = f'torchrun train.py --out {shlex.quote(path + "/x y")} --in "{path}"'
    out, found = rewrite_artifact_paths(script)
    assert found == {"TORCHX_KFP_OUTPUTS_MODEL_PATH": path}
    assert out == (
        "torchrun train.py --out ''\"${TORCHX_KFP_OUTPUTS_MODEL_PATH}\"'/x y'"
        ' --in "${TORCHX_KFP_OUTPUTS_MODEL_PATH}"'
    )
    assert unresolved(out) == []
