"""The backend-rules harness's rules on their own (no Docker): tests/_kfp_backend.py."""

import json

import pytest
from _kfp_backend import (
    RunContext,
    driver_args,
    driver_number,
    launcher_args,
    launcher_number,
    resolve_constant,
    unresolved_left,
)


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
