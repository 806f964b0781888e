"""The backend-rules harness's rules on their own (no Docker): tests/_kfp_backend.py."""

import json
from pathlib import Path
from typing import Any

import pytest
from _kfp_backend import (
    BackendRuleError,
    RunContext,
    driver_args,
    driver_number,
    launcher_args,
    launcher_number,
    resolve_constant,
    unresolved_left,
)
from _kfp_backend_run import BackendRun


@pytest.mark.parametrize(
    "value, driver, launcher",
    [
        (50.0, "50", "50"),
        (0.5, "0.5", "0.5"),
        (1234567.5, "1.2345675e+06", "1234567.5"),
        (1e-05, "1e-05", "0.00001"),
        (-3.0, "-3", "-3"),
    ],
)
def test_numbers_as_the_backend_prints_them(value: float, driver: str, launcher: str) -> None:
    assert driver_number(value) == driver
    assert launcher_number(value) == launcher


def test_only_whole_run_placeholders_resolve_in_constants() -> None:
    ctx = RunContext("run-uuid", "run", 77)
    assert resolve_constant("{{$.pipeline_job_uuid}}", ctx, "train") == "run-uuid"
    assert resolve_constant("{{$.pipeline_task_uuid}}", ctx, "train") == "77"
    assert resolve_constant("{{$.pipeline_task_name}}", ctx, "train") == "train"
    assert resolve_constant("x-{{$.pipeline_job_uuid}}", ctx, "t") == "x-{{$.pipeline_job_uuid}}"


def test_driver_then_launcher_resolve_what_the_backend_does() -> None:
    params = {"x": "a b", "n": 50.0, "opt": None}
    argv = driver_args(
        [
            "echo",
            "--x={{$.inputs.parameters['x']}}/{{$.inputs.parameters['n']}}",
            '{"IfPresent": {"InputName": "opt", "Then": ["--opt"], "Else": ["--no-opt"]}}',
            "{{$.outputs.parameters['o'].output_file}}",
            "{{$.pipeline_task_uuid}}",
            '{"Concat": ["a", "b"]}',
            "{{$}}",
        ],
        params,
    )
    assert argv[1:3] == ["--x=a b/50", "--no-opt"]
    executor_input = {
        "inputs": {"parameterValues": params},
        "outputs": {"parameters": {"o": {"outputFile": "/tmp/kfp/outputs/o"}}, "artifacts": {}},
    }
    argv = launcher_args(argv, executor_input)
    assert argv[3] == "/tmp/kfp/outputs/o"
    assert json.loads(argv[6]) == executor_input
    assert unresolved_left(argv) == ["{{$.pipeline_task_uuid}}", '{"Concat": ["a", "b"]}']


def _fragment(command: list[str], passed: dict[str, Any]) -> dict[str, Any]:
    """A one-task IR: component input ``opt`` is optional with a default; ``passed`` as given."""
    return {
        "pipelineInfo": {"name": "p"},
        "components": {
            "comp-t": {
                "executorLabel": "exec-t",
                "inputDefinitions": {
                    "parameters": {
                        "opt": {"parameterType": "STRING", "defaultValue": "", "isOptional": True}
                    }
                },
            }
        },
        "deploymentSpec": {
            "executors": {"exec-t": {"container": {"image": "i", "command": command}}}
        },
        "root": {
            "dag": {
                "tasks": {
                    "t": {"componentRef": {"name": "comp-t"}, "inputs": {"parameters": passed}}
                }
            }
        },
    }


_OPT = "OPT={{$.inputs.parameters['opt']}}"
_GUARDED = json.dumps({"IfPresent": {"InputName": "opt", "Then": [_OPT]}})


def _argv(ir: dict[str, Any], tmp_path: Path) -> list[str]:
    task = ir["root"]["dag"]["tasks"]["t"]
    return BackendRun(ir, None, tmp_path).resolve("t", task, {})[3]


def test_an_unpassed_optional_input_is_not_in_the_executor_input(tmp_path: Path) -> None:
    """The 2.17.0 driver does not fill component defaults: the old components failed here."""
    with pytest.raises(BackendRuleError, match="parameter 'opt' not found in executor input"):
        _argv(_fragment(["env", _OPT], {}), tmp_path)
    assert _argv(_fragment(["env", _GUARDED], {}), tmp_path) == ["env"]
    constant = {"opt": {"runtimeValue": {"constant": "v"}}}
    assert _argv(_fragment(["env", _GUARDED], constant), tmp_path) == ["env", "OPT=v"]
    assert _argv(_fragment(["env", _OPT], constant), tmp_path) == ["env", "OPT=v"]


def test_the_old_echo_pipeline_fails_and_the_fixed_one_resolves(tmp_path: Path) -> None:
    """The golden echo IR as compiled now, and with its parent export unguarded as before."""
    import yaml

    golden = Path(__file__).parent / "golden" / "torchx_echo.yaml"
    ir = next(yaml.safe_load_all(golden.read_text()))
    task = ir["root"]["dag"]["tasks"]["echo"]
    argv = BackendRun(ir, None, tmp_path).resolve("echo", task, {"msg": "hi"})[3]
    assert not any(a.startswith("TORCHX_PARENT_RUN_ID=") for a in argv)
    command = ir["deploymentSpec"]["executors"]["exec-echo"]["container"]["command"]
    guard = next(i for i, e in enumerate(command) if e.startswith('{"IfPresent"'))
    command[guard] = json.loads(command[guard])["IfPresent"]["Then"][0]
    with pytest.raises(BackendRuleError, match="parameter 'parent_run_id' not found"):
        BackendRun(ir, None, tmp_path).resolve("echo", task, {"msg": "hi"})
