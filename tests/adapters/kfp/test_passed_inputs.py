"""No task references an input it does not pass (the KFP 2.17 driver's rule), on real IR."""
# no `from __future__ import annotations`: KFP reads real annotations of pipeline functions

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kfp")

from _kfp_support import compile_ir, executor
from kfp import dsl

from torchx_kfp import container_from_app
from torchx_kfp._compile.passed_inputs import referenced_inputs
from torchx_kfp._compile.placeholders import check_pipeline_spec

BUSYBOX = "torchx-flow/busybox:latest"
PARENT = "TORCHX_PARENT_RUN_ID={{$.inputs.parameters['parent_run_id']}}"


@dsl.container_component
def _opt_echo(msg: str = "") -> dsl.ContainerSpec:
    return dsl.ContainerSpec(image=BUSYBOX, command=["echo", msg])


@dsl.container_component
def _guarded_echo(msg: str = "") -> dsl.ContainerSpec:
    return dsl.ContainerSpec(
        image=BUSYBOX,
        command=["echo", dsl.IfPresentPlaceholder(input_name="msg", then=[msg], else_=["none"])],
    )


def test_unpassed_optional_input_in_the_command_is_refused(tmp_path: Path) -> None:
    @dsl.pipeline
    def unpassed() -> None:
        _opt_echo()

    ir, _ = compile_ir(unpassed, tmp_path)
    assert "msg" not in ir["root"]["dag"]["tasks"]["opt-echo"].get("inputs", {}).get(
        "parameters", {}
    )
    with pytest.raises(ValueError, match=r"^KFP task `opt-echo`: .* input `msg`, which the task"):
        check_pipeline_spec(ir)


@pytest.mark.parametrize("guarded", [False, True])
def test_passed_or_guarded_inputs_pass(tmp_path: Path, guarded: bool) -> None:
    @dsl.pipeline
    def ok() -> None:
        if guarded:
            _guarded_echo()
        else:
            _opt_echo(msg="")

    ir, _ = compile_ir(ok, tmp_path)
    check_pipeline_spec(ir)


def test_only_the_then_branch_of_its_own_guard_is_safe() -> None:
    guard = '{"IfPresent": {"InputName": "a", "Then": ["%s"]}}'
    assert referenced_inputs([guard % "{{$.inputs.parameters['a']}}"]) == set()
    assert referenced_inputs([guard % "{{$.inputs.parameters['b']}}"]) == {"b"}
    assert referenced_inputs(["x={{$.inputs.parameters['c']}}", "{{$}}"]) == {"c"}
    other = '{"IfPresent": {"InputName": "a", "Else": "{{$.inputs.parameters[\'a\']}}"}}'
    assert referenced_inputs([other]) == {"a"}  # the Else branch runs when `a` is absent


def _chain() -> Any:
    @dsl.pipeline
    def chain() -> None:
        first = container_from_app("utils.echo", image=BUSYBOX)
        container_from_app(
            "utils.echo", msg="b", image=BUSYBOX, parent_run_id=first.outputs["tracker_run_id"]
        )

    return chain


def test_first_task_of_a_chain_passes_the_check(tmp_path: Path) -> None:
    ir, _ = compile_ir(_chain(), tmp_path)
    check_pipeline_spec(ir)
    tasks = ir["root"]["dag"]["tasks"]
    first = tasks["echo"]["inputs"]["parameters"]
    assert "parent_run_id" not in first
    assert first["msg"] == {"runtimeValue": {"constant": "hello world"}}  # default, passed
    assert "parent_run_id" in tasks["echo-2"]["inputs"]["parameters"]
    command = executor(ir, "echo")["command"]
    assert PARENT not in command
    assert any(e.startswith('{"IfPresent": {"InputName": "parent_run_id"') for e in command)


def test_the_old_unguarded_parent_export_would_have_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the fix every component exported ``parent_run_id`` unguarded."""
    from torchx_kfp._compile import spec

    monkeypatch.setattr(spec, "_parent_export", lambda: PARENT)
    ir, _ = compile_ir(_chain(), tmp_path)
    assert PARENT in executor(ir, "echo")["command"]
    with pytest.raises(ValueError, match=r"^KFP task `echo`: .* input `parent_run_id`"):
        check_pipeline_spec(ir)
