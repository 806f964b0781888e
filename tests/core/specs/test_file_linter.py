"""Tests for torchx.specs.file_linter and torchx.util.io.read_conf_file."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from _support import write_dist

from torchx.specs import file_linter
from torchx.specs.file_linter import (
    LinterMessage,
    ReturnTypeValidator,
    get_fn_docstring,
    validate,
)
from torchx.util.io import read_conf_file


def _write(tmp_path: Path, body: str) -> str:
    path = tmp_path / "comp.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def _descriptions(tmp_path: Path, body: str, fn: str = "comp") -> list[str]:
    return [m.description for m in validate(_write(tmp_path, body), fn)]


def test_valid_component_has_no_messages(tmp_path: Path) -> None:
    body = """
    from typing import Annotated, Dict, List, Optional, Tuple
    import torchx.specs as specs

    def comp(
        a: int,
        *args: str,
        b: Optional[str] = None,
        c: "dict[str, int] | None" = None,
        d: None | List[float] = None,
        e: Annotated[str, "-x"] = "",
        f: Tuple[int, str] = (1, "a"),
        g: MyType = None,
        h: Dict[str, str] = {},
    ) -> specs.AppDef:
        ...
    """
    assert _descriptions(tmp_path, body) == []


@pytest.mark.parametrize(
    ("annotation", "reason"),
    [
        (
            "dict[str]",
            "Malformed dict type 'dict[str]', expected exactly two type parameters (dict[K, V])",
        ),
        ("dict[list[str], str]", "Non-primitive key type 'list[str]'"),
        ("Dict[str, list[str]]", "Non-primitive value type 'list[str]'"),
        ("list[list[str]]", "Non-primitive element type 'list[str]'"),
        (
            "tuple[int]",
            "Unsupported tuple type 'tuple[int]': single-element tuples are valid typing but not"
            " supported for components; expected element types (tuple[T1, T2, ...])",
        ),
        ("Optional[Optional[str]]", "Unsupported container type 'Optional'"),
        ("tuple[int, list[int]]", "Non-primitive element type 'list[int]'"),
        ("set[str]", "Unsupported container type 'set'"),
        ("typing.Any", "Unsupported argument type 'typing.Any'"),
    ],
)
def test_arg_type_messages(tmp_path: Path, annotation: str, reason: str) -> None:
    body = f"def comp(x: {annotation}) -> AppDef:\n    ...\n"
    expected = f"{reason} for argument 'x: {annotation}' in function 'comp'"
    assert _descriptions(tmp_path, body) == [expected]


def test_missing_annotation_on_every_argument_kind(tmp_path: Path) -> None:
    body = "def comp(a, *b, c) -> AppDef:\n    ...\n"
    assert _descriptions(tmp_path, body) == [
        "Missing type annotation for argument 'a' in function 'comp'",
        "Missing type annotation for argument 'b' in function 'comp'",
        "Missing type annotation for argument 'c' in function 'comp'",
    ]


def test_message_fields(tmp_path: Path) -> None:
    path = _write(tmp_path, "\n\ndef comp(a) -> AppDef:\n    ...\n")
    (msg,) = validate(path, "comp")
    assert msg == LinterMessage("TorchxFunctionValidator", msg.description, 3, 9, "error")


@pytest.mark.parametrize(
    ("returns", "expected"),
    [
        (
            "",
            "Function: comp missing return annotation or has unknown annotations."
            " Supported return annotation: AppDef",
        ),
        (
            " -> list[AppDef]",
            "Function: comp missing return annotation or has unknown"
            " annotations. Supported return annotation: AppDef",
        ),
        (
            " -> Role",
            "Function: comp has incorrect return annotation, supported annotation: AppDef",
        ),
        (
            " -> 'specs.Role'",
            "Function: comp has incorrect return annotation, supported annotation: AppDef",
        ),
    ],
)
def test_return_type_messages(tmp_path: Path, returns: str, expected: str) -> None:
    assert _descriptions(tmp_path, f"def comp(){returns}:\n    ...\n") == [expected]


@pytest.mark.parametrize("returns", ["AppDef", "specs.AppDef", "'AppDef'", "'specs.AppDef'"])
def test_return_type_accepted_spellings(tmp_path: Path, returns: str) -> None:
    assert _descriptions(tmp_path, f"def comp() -> {returns}:\n    ...\n") == []


def test_custom_validators_replace_defaults(tmp_path: Path) -> None:
    path = _write(tmp_path, "def comp(a) -> Role:\n    ...\n")
    msgs = validate(path, "comp", validators=[ReturnTypeValidator("Role")])
    assert msgs == []


def test_function_not_found_and_syntax_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "def other() -> AppDef:\n    ...\n")
    assert validate(path, "comp") == [
        LinterMessage("TorchXValidator", "Function comp not found", 0, 0)
    ]
    path = _write(tmp_path, "def comp(:\n")
    (msg,) = validate(path, "comp")
    assert msg.name == "TorchXValidator"
    assert msg.line == 1


def test_docstrings_are_not_enforced(tmp_path: Path) -> None:
    assert _descriptions(tmp_path, "def comp(a: int) -> AppDef:\n    return None\n") == []


def _documented(a: int, b: str, *args: str) -> None:
    """Short line.

    Longer description
    over two lines.

    Args:
        a: the a value
        args: extra args
    """


def _undocumented(a: int) -> None:
    pass


def test_get_fn_docstring() -> None:
    desc, args = get_fn_docstring(_documented)
    assert desc == "Short line.\nLonger description\nover two lines."
    assert args == {"a": "the a value", "b": " ", "args": "extra args"}
    desc, args = get_fn_docstring(_undocumented)
    assert desc == (
        "_undocumented TIP: improve this help string by adding a docstring\nto your component"
        " (see: https://meta-pytorch.org/torchx/latest/component_best_practices.html)"
    )
    assert args == {"a": " "}


def test_read_conf_file_prefers_disk(tmp_path: Path) -> None:
    path = tmp_path / "x.py"
    path.write_text("hello")
    assert read_conf_file(str(path)) == "hello"


def test_read_conf_file_builtin_relative_to_package() -> None:
    assert "def ddp(" in read_conf_file("components/dist.py")
    assert "def ddp(" in read_conf_file("torchx/components/dist.py")


def test_read_conf_file_missing() -> None:
    with pytest.raises(FileNotFoundError) as e:
        read_conf_file("nope/missing.py")
    assert str(e.value) == (
        "nope/missing.py does not exist and is not a builtin."
        " For a list of available builtins run `torchx builtins`"
    )


def test_read_conf_file_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "linter_fake_files.py").write_text(
        "def contents(path):\n"
        "    return f'# from entry point: {path}' if path.startswith('virtual/') else None\n"
    )
    value = "linter_fake_files:contents"
    write_dist(tmp_path, "fake_files", {"torchx.file": {"get_file_contents": value}})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert read_conf_file("virtual/a.py") == "# from entry point: virtual/a.py"
    with pytest.raises(FileNotFoundError):
        read_conf_file("components/dist.py")  # the entry point replaces the default lookup


def test_linter_reads_through_module_level_read_conf_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_linter, "read_conf_file", lambda p: "def c() -> AppDef:\n  ...\n")
    assert validate("does-not-exist.py", "c") == []


@pytest.mark.parametrize(
    "annotation",
    [
        "Optional[list[str]]",
        "dict[str, int] | None",
        "Annotated[Optional[str], 'x']",
        "'str | None'",
    ],
)
def test_one_optional_layer_is_accepted(tmp_path: Path, annotation: str) -> None:
    body = f"def comp(x: {annotation}) -> AppDef:\n    ...\n"
    assert _descriptions(tmp_path, body) == []
