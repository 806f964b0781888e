import inspect
from typing import Dict, List, Optional, Union  # noqa: UP035

import pytest

from torchx.util.types import (
    decode,
    decode_from_string,
    decode_optional,
    get_argparse_param_type,
    is_bool,
    is_primitive,
    none_throws,
    to_dict,
)


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("", {}),
        ("   ", {}),
        ("FOO=v1", {"FOO": "v1"}),
        ("FOO=v1,BAR=v2", {"FOO": "v1", "BAR": "v2"}),
        ("FOO=v1;BAR=v2", {"FOO": "v1", "BAR": "v2"}),
        ("FOO=v1,v2,BAR=v3", {"FOO": "v1,v2", "BAR": "v3"}),
        ("FOO=v1;v2,BAR=v3;v4", {"FOO": "v1;v2", "BAR": "v3;v4"}),
        ("FOO=", {"FOO": ""}),
        ("FOO='a=b,c'", {"FOO": "a=b,c"}),
        ('FOO="x;y=z",BAR=1', {"FOO": "x;y=z", "BAR": "1"}),
    ],
)
def test_to_dict(arg: str, expected: dict[str, str]) -> None:
    assert to_dict(arg) == expected


def test_to_dict_without_pair_raises() -> None:
    with pytest.raises(ValueError, match=r"^`foo` does not have at least one `key=value` pair$"):
        to_dict("foo")


def test_to_dict_unsplittable_piece_raises() -> None:
    with pytest.raises(ValueError, match=r"`v1 BAR` cannot be split into `val<delim>key`"):
        to_dict("FOO=v1 BAR=v2")


@pytest.mark.parametrize(
    "tp",
    [Optional[int], Union[int, None], Union[None, int], int | None, None | int],
)
def test_decode_optional_unwraps_both_orders(tp: object) -> None:
    assert decode_optional(tp) is int


@pytest.mark.parametrize("tp", [int, Union[int, str], int | str | None, list[str]])
def test_decode_optional_keeps_other_types(tp: object) -> None:
    assert decode_optional(tp) == tp


def test_decode_bool_and_none() -> None:
    assert decode("True", bool) is True
    assert decode("false", bool) is False
    assert decode("", bool) is False
    assert decode(True, bool) is True
    assert decode(None, int) is None


def test_decode_dict_and_list() -> None:
    assert decode("A=1,B=2", dict[str, int]) == {"A": 1, "B": 2}
    assert decode("A=1", Dict[str, str]) == {"A": "1"}  # noqa: UP006
    assert decode("1, 2,3", list[int]) == [1, 2, 3]
    assert decode("a,b", List[str]) == ["a", "b"]  # noqa: UP006
    assert decode("", list[str]) is None
    assert decode(5, int) == 5
    assert decode("x", str) == "x"


def test_decode_errors() -> None:
    with pytest.raises(ValueError, match="List types support only primitives: int, str, float"):
        decode_from_string("a", list[bool])
    with pytest.raises(ValueError, match="unsupported argument annotation"):
        decode_from_string("a", set[str])


def test_primitive_helpers() -> None:
    assert is_primitive(int) and is_primitive(bool) and not is_primitive(list[str])
    assert is_bool(bool) and not is_bool(int)

    def fn(a: int, b: list[str], c: float | None = None, d: bool = False) -> None: ...

    params = inspect.signature(fn).parameters
    assert get_argparse_param_type(params["a"]) is int
    assert get_argparse_param_type(params["b"]) is str
    assert get_argparse_param_type(params["c"]) is float
    assert get_argparse_param_type(params["d"]) is str


def test_none_throws() -> None:
    assert none_throws(0) == 0
    with pytest.raises(AssertionError, match="boom"):
        none_throws(None, "boom")
