"""Launcher channels as inputs of their own: the compiled IR and the in-task substitution."""

import json
from pathlib import Path

import pytest

pytest.importorskip("kfp", reason="kfp is not installed (pip install -e '.[kfp]')")

from _kfp_support import compile_ir

from torchx_kfp._compile.placeholders import check_pipeline_spec
from torchx_kfp._in_task.lifted import copy_output, fill, value_text


def _pipeline() -> object:
    from kfp import dsl

    from torchx_kfp import launcher_from_app

    @dsl.pipeline(name="lifted")
    def lifted(x: str = "a", n: int = 3, flag: bool = True) -> None:
        launcher_from_app(
            "utils.echo",
            ["--msg", f"{x}/{n} {x}"],
            env={"A": x, "B": f"{flag}"},
            params={"n": n},
            scheduler_cfg=f"k={x}",
            parent_run_id=x,
        )

    return lifted


def test_no_channel_is_left_inside_a_constant(tmp_path: Path) -> None:
    ir, _ = compile_ir(_pipeline(), tmp_path)
    check_pipeline_spec(ir)
    (task,) = ir["root"]["dag"]["tasks"].values()
    inputs = task["inputs"]["parameters"]
    constants = {k: v["runtimeValue"]["constant"] for k, v in inputs.items() if "runtimeValue" in v}
    assert "{{$" not in json.dumps(constants) and "pipelinechannel" not in json.dumps(inputs)
    assert constants["args"] == ["--msg", "{{torchx-kfp:0}}/{{torchx-kfp:1}} {{torchx-kfp:0}}"]
    assert constants["env"] == {"A": "{{torchx-kfp:0}}", "B": "{{torchx-kfp:2}}"}
    assert constants["params"] == {"n": "{{torchx-kfp:1}}"}
    assert constants["scheduler_cfg"] == "k={{torchx-kfp:0}}"
    assert inputs["parent_run_id"] == {"componentInputParameter": "x"}  # a whole channel stays
    assert {
        k: v["componentInputParameter"] for k, v in inputs.items() if "torchx_channel" in k
    } == {
        "torchx_channel_0": "x",
        "torchx_channel_1": "n",
        "torchx_channel_2": "flag",
    }
    comp = ir["components"][task["componentRef"]["name"]]["inputDefinitions"]["parameters"]
    types = {k: v["parameterType"] for k, v in comp.items() if "torchx_channel" in k}
    assert types == {
        "torchx_channel_0": "STRING",
        "torchx_channel_1": "NUMBER_INTEGER",
        "torchx_channel_2": "BOOLEAN",
    }


def test_fill_puts_values_back_once() -> None:
    hard = 'a "b" \\ c\n{{torchx-kfp:1}} {{ d }}'
    channels = {0: hard, 1: 7.0, 2: True, 3: [1, "x"]}
    value = {
        "args": ["--m", "{{torchx-kfp:0}}/{{torchx-kfp:1}}", "{{torchx-kfp:2}}"],
        "n": "{{torchx-kfp:1}}",
        "{{torchx-kfp:2}}": "{{torchx-kfp:3}}",
        "keep": 5,
    }
    assert fill(value, channels) == {
        "args": ["--m", f"{hard}/7", True],
        "n": 7.0,  # a whole element keeps its type
        "true": [1, "x"],
        "keep": 5,
    }
    assert [value_text(v) for v in (1.5, 2.0, False, None, {"a": 1})] == [
        "1.5",
        "2",
        "false",
        "",
        '{"a":1}',
    ]


def test_copy_output_copies_files_and_directories_and_names_a_missing_one(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("x")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "g.txt").write_text("y")
    copy_output("f", str(tmp_path / "f.txt"), str(tmp_path / "out" / "f"))
    copy_output("d", str(tmp_path / "d"), str(tmp_path / "out" / "d"))
    assert (tmp_path / "out" / "f").read_text() == "x"
    assert (tmp_path / "out" / "d" / "g.txt").read_text() == "y"
    with pytest.raises(FileNotFoundError, match="output `m`: the app did not write /nowhere"):
        copy_output("m", "/nowhere", str(tmp_path / "out" / "m"))


def test_an_artifact_channel_in_a_launcher_input_is_one_clear_error() -> None:
    from kfp import dsl

    from torchx_kfp import launcher_from_app

    @dsl.component(base_image="busybox", install_kfp_package=False)
    def make(data: dsl.Output[dsl.Dataset]) -> None:
        pass

    with pytest.raises(ValueError, match="launcher task inputs take parameters, but `data`"):

        @dsl.pipeline(name="bad")
        def bad() -> None:
            launcher_from_app("utils.echo", params={"msg": make().outputs["data"]})


def test_the_appdef_json_input_is_filled_after_parsing() -> None:
    """An AppDef materialized with a channel in its args holds a marker inside its JSON
    text; the value goes in after parsing, so a quote cannot break the JSON."""
    from torchx_kfp._in_task.lifted import _filled

    app = json.dumps({"roles": [{"args": ["--msg", "<{{torchx-kfp:0}}>"]}]})
    out = _filled({"app": app, "args": ["{{torchx-kfp:0}}"]}, {0: 'a "q" \\'})
    assert json.loads(out["app"]) == {"roles": [{"args": ["--msg", '<a "q" \\>']}]}
    assert out["args"] == ['a "q" \\']


def test_user_text_that_looks_like_a_marker_reaches_the_app_unchanged(tmp_path: Path) -> None:
    """A constant holding ``{{torchx-kfp:0}}`` itself is escaped beside a lifted channel and
    comes back literally; without a channel nothing is escaped (the task fills nothing)."""
    from kfp import dsl

    from torchx_kfp import launcher_from_app

    literal = "{{torchx-kfp:0}} {{torchx-kfp:e}} {{torchx-kfp:"

    @dsl.pipeline(name="marker-text")
    def marker_text(x: str = "a") -> None:
        launcher_from_app("utils.echo", ["--msg", f"{x} {literal}"], env={"L": literal})

    ir, _ = compile_ir(marker_text, tmp_path)
    (task,) = ir["root"]["dag"]["tasks"].values()
    constants = {
        k: v["runtimeValue"]["constant"]
        for k, v in task["inputs"]["parameters"].items()
        if "runtimeValue" in v
    }
    assert constants["env"] == {"L": "{{torchx-kfp:e}}0}} {{torchx-kfp:e}}e}} {{torchx-kfp:e}}"}
    filled = fill(constants, {0: 'v "q"'})
    assert filled["args"] == ["--msg", f'v "q" {literal}'] and filled["env"] == {"L": literal}

    @dsl.pipeline(name="no-channel")
    def no_channel() -> None:
        launcher_from_app("utils.echo", ["--msg", literal])

    (tmp_path / "plain").mkdir()
    ir, _ = compile_ir(no_channel, tmp_path / "plain")
    (task,) = ir["root"]["dag"]["tasks"].values()
    args = task["inputs"]["parameters"]["args"]["runtimeValue"]["constant"]
    assert args == ["--msg", literal]
