"""Tests for torchx.specs.builders: parser, precedence, decoding, materialize_appdef."""

from __future__ import annotations

from typing import Annotated, Optional

import pytest

from torchx import specs
from torchx.specs import api, builders
from torchx.specs.builders import (
    ComponentArgs,
    ComponentArgsError,
    _create_args_parser,
    _merge_config_values_with_args,
    component_args_from_str,
    materialize_appdef,
    parse_args,
)


def comp(
    name: str,
    *args: str,
    n: int = 1,
    h: Optional[str] = None,
    flag: bool = False,
    env: Optional[dict[str, int]] = None,
    nums: None | list[float] = None,
    ratio: float = 0.5,
    cn: Annotated[str, "-cn"] = "cfg",
) -> specs.AppDef:
    """A test component.

    Args:
        name: the app name
        args: the arguments
        n: number of replicas
    """
    return specs.AppDef(
        name=name,
        roles=[
            specs.Role(
                name="r",
                image="img",
                args=list(args),
                num_replicas=n,
                metadata={
                    "h": h,
                    "flag": flag,
                    "env": env,
                    "nums": nums,
                    "ratio": ratio,
                    "cn": cn,
                },
            )
        ],
    )


def positional(a: str, b: int = 3) -> specs.AppDef:
    return specs.AppDef(name=f"{a}-{b}")


def _meta(app: specs.AppDef) -> dict[str, object]:
    return app.roles[0].metadata


def test_parser_options_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    parser = _create_args_parser(comp)
    assert parser.prog == "torchx run <run args...> comp "
    strings = {s for a in parser._actions for s in a.option_strings}
    assert {"--name", "--n", "-n", "--h", "-h", "--cn", "-cn", "--help"} <= strings
    assert "-c" not in strings  # Annotated option replaces the one-letter alias logic
    with pytest.raises(SystemExit) as e:
        parser.parse_args(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "A test component." in out
    assert "the app name (required)" in out
    assert "number of replicas (default: 1)" in out


def test_bool_defaults_are_strings() -> None:
    parser = _create_args_parser(comp)
    flag = next(a for a in parser._actions if a.dest == "flag")
    assert flag.default == "False"


def test_decoding() -> None:
    app = materialize_appdef(
        comp,
        [
            "--name", "x", "-n", "2", "-h", "gpu.small", "--flag", "TRUE",
            "--env", "A=1,B=2", "--nums", "1.5, 2", "--ratio", "0.25", "-cn", "other",
            "--", "a", "--b",
        ],
    )  # fmt: skip
    assert app.name == "x"
    assert app.roles[0].num_replicas == 2
    assert app.roles[0].args == ["a", "--b"]
    assert _meta(app) == {
        "h": "gpu.small",
        "flag": True,
        "env": {"A": 1, "B": 2},
        "nums": [1.5, 2.0],
        "ratio": 0.25,
        "cn": "other",
    }


def test_defaults_and_empty_containers() -> None:
    args = component_args_from_str(comp, ["--name", "x", "--env", "", "--nums", ""])
    assert args == ComponentArgs(
        positional_args={"name": "x"},
        var_args=[],
        kwargs={
            "n": 1,
            "h": None,
            "flag": False,
            "env": None,
            "nums": None,
            "ratio": 0.5,
            "cn": "cfg",
        },
    )


def test_positional_parameters_are_options() -> None:
    assert materialize_appdef(positional, ["--a", "x"]).name == "x-3"
    assert materialize_appdef(positional, ["--b", "4", "--a", "y"]).name == "y-4"


def test_precedence_cli_config_component_defaults_signature() -> None:
    defaults = {"n": "3", "ratio": "0.75", "cn": "from-section", "args": "d1 d2"}
    config = {"n": 5, "name": "from-config", "cn": "from-config"}
    app = materialize_appdef(comp, ["-n", "7"], cmpnt_defaults=defaults, config=config)
    assert app.name == "from-config"  # required, but supplied by config
    assert app.roles[0].num_replicas == 7  # CLI beats config
    assert _meta(app)["cn"] == "from-config"  # config beats [component:] defaults
    assert _meta(app)["ratio"] == 0.75  # [component:] beats the signature default
    assert app.roles[0].args == ["d1", "d2"]  # empty *args fall back to the default string
    app = materialize_appdef(comp, ["--name", "cli", "x"], cmpnt_defaults=defaults)
    assert app.name == "cli"
    assert app.roles[0].args == ["x"]


def test_merge_config_values_with_args() -> None:
    import argparse

    ns = argparse.Namespace(a="cli", b="default")
    _merge_config_values_with_args(ns, {"a": "cfg", "b": "cfg"}, {"a"})
    assert vars(ns) == {"a": "cli", "b": "cfg"}


def test_parse_args_returns_undecoded_namespace() -> None:
    ns = parse_args(comp, ["--name", "x", "--env", "A=1"])
    assert ns.env == "A=1" and ns.name == "x" and ns.args == []


def test_kwargs_component_is_rejected() -> None:
    def kw(**opts: str) -> specs.AppDef:
        return specs.AppDef(name="kw")

    with pytest.raises(TypeError) as e:
        materialize_appdef(kw, [])
    assert str(e.value) == (
        "component fn param `opts` is a '**kwargs' which is not supported;"
        " consider changing the type to a dict or explicitly declare the params"
    )


def test_non_appdef_result() -> None:
    def notapp(a: str = "x") -> specs.AppDef:
        return "nope"  # type: ignore[return-value]

    with pytest.raises(TypeError) as e:
        materialize_appdef(notapp, [])
    assert str(e.value) == "Expected a component that returns `AppDef`, but got `<class 'str'>`"


def test_annotation_errors() -> None:
    def bad_list(x: list[list[int]] = []) -> specs.AppDef:  # noqa: B006
        return specs.AppDef(name="x")

    def bad_tuple(x: Optional[tuple[int, int]] = None) -> specs.AppDef:
        return specs.AppDef(name="x")

    with pytest.raises(ValueError, match=r"^List types support only primitives: int, str, float$"):
        materialize_appdef(bad_list, ["--x", "1"])
    with pytest.raises(ValueError, match=r"^unsupported argument annotation `tuple\[int, int\]`"):
        materialize_appdef(bad_tuple, ["--x", "1,2"])


class MyType:
    pass


def test_bare_class_arrives_as_string() -> None:
    def custom(x: MyType) -> specs.AppDef:
        return specs.AppDef(name=repr(x))

    assert materialize_appdef(custom, ["--x", "val"]).name == "'val'"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        ([], "the following arguments are required: --name"),
        (["--name", "x", "-n", "two"], "argument --n/-n: invalid int value: 'two'"),
        (["--name", "x", "--ratoi", "1"], "(did you mean `--ratio`?)"),
    ],
)
def test_bad_arguments_raise_one_line(argv: list[str], fragment: str) -> None:
    with pytest.raises(ComponentArgsError) as e:
        materialize_appdef(positional if not argv else comp, argv or [])
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("invalid arguments for component `")
    assert isinstance(e.value, ValueError)
    if argv:
        assert fragment in msg
    else:
        assert "the following arguments are required: --a" in msg


def test_bad_dict_value_names_the_parameter() -> None:
    with pytest.raises(ComponentArgsError, match="--env"):
        materialize_appdef(comp, ["--name", "x", "--env", "novalue"])


def test_string_annotations(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from torchx.specs.finder import get_component

    path = tmp_path / "c.py"
    path.write_text(
        "from __future__ import annotations\n"
        "from typing import Optional\n"
        "from torchx import specs\n"
        "def c(n: int = 1, env: Optional[dict[str, str]] = None) -> specs.AppDef:\n"
        "    return specs.AppDef(name=f'{n+1}', metadata=env or {})\n"
    )
    fn = get_component(f"{path}:c").fn
    app = materialize_appdef(fn, ["--n", "2", "--env", "K=V"])
    assert app.name == "3" and app.metadata == {"K": "V"}


def test_reexports() -> None:
    assert builders.make_app_handle is api.make_app_handle
    assert builders.parse_mounts is api.parse_mounts
    assert specs.materialize_appdef is materialize_appdef
