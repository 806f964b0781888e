import logging
from typing import Dict, List  # noqa: UP035

import pytest

from torchx.specs.api import InvalidRunConfigException, runopt, runopts


@pytest.fixture
def opts() -> runopts:
    o = runopts()
    o.add("run_as", str, "user to run as", required=True)
    o.add("priority", int, "job priority", default=1)
    o.add("dry", bool, "dry mode", default=False)
    o.add("log_dir", str, "log directory")
    o.add("tags", list[str], "tags")
    o.add("env", Dict[str, str], "env vars")  # noqa: UP006
    return o


def test_iteration_len_and_get(opts: runopts) -> None:
    assert len(opts) == 6
    assert [name for name, _ in opts] == ["run_as", "priority", "dry", "log_dir", "tags", "env"]
    assert opts.get("priority") == runopt(1, int, False, "job priority")
    assert opts.get("logDir") is opts.get("log_dir")
    assert opts.get("runAs") is not None
    assert opts.get("nope") is None


def test_add_validation() -> None:
    o = runopts()
    with pytest.raises(
        ValueError, match="^Required option: x must not specify default value. Given: 1$"
    ):
        o.add("x", int, "h", default=1, required=True)
    with pytest.raises(TypeError, match=r"^Option: y, must be of type: int. Given: a \(str\)$"):
        o.add("y", int, "h", default="a")
    o.add("z", List[str], "h", default=["a"])  # noqa: UP006
    assert len(o) == 1


def test_merge(opts: runopts) -> None:
    other = runopts()
    other.add("priority", int, "override", default=5)
    other.add("extra", str, "extra")
    merged = opts | other
    assert len(merged) == 7 and merged.get("priority").default == 5  # type: ignore[union-attr]
    assert opts.get("priority").default == 1  # type: ignore[union-attr]
    opts.update(other)
    assert len(opts) == 7


def test_is_type() -> None:
    assert runopts.is_type(["a"], list[str]) and runopts.is_type(["a"], List[str])  # noqa: UP006
    assert not runopts.is_type([1], list[str])
    assert runopts.is_type({"a": "b"}, dict[str, str]) and not runopts.is_type(
        {"a": 1}, dict[str, str]
    )
    assert runopts.is_type(1, int) and not runopts.is_type("1", int)


def test_resolve_fills_defaults_keeps_unknown_and_renames_camel_case(opts: runopts) -> None:
    cfg = {"runAs": "me", "unknown": 3, "logDir": "/tmp"}
    resolved = opts.resolve(cfg)
    assert resolved == {
        "run_as": "me",
        "unknown": 3,
        "log_dir": "/tmp",
        "priority": 1,
        "dry": False,
        "tags": None,
        "env": None,
    }
    assert cfg == {"runAs": "me", "unknown": 3, "logDir": "/tmp"}


def test_resolve_errors(opts: runopts) -> None:
    with pytest.raises(InvalidRunConfigException) as exc:
        opts.resolve({})
    assert str(exc.value) == (
        "Required run option: run_as, must be provided and not `None`. Given: <EMPTY>"
    )
    assert exc.value.cfg_key == "run_as"
    with pytest.raises(
        InvalidRunConfigException,
        match=r"Run option: priority, must be of type: int, but was: x \(str\)",
    ):
        opts.resolve({"run_as": "me", "priority": "x"})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", True),
        ("YES", True),
        ("1", True),
        ("On", True),
        ("false", False),
        ("0", False),
        ("NO", False),
        ("off", False),
    ],
)
def test_cast_bool(value: str, expected: bool) -> None:
    assert runopt(None, bool, False, "").cast_to_type(value) is expected


def test_cast_errors_and_types() -> None:
    with pytest.raises(ValueError, match=r"^`maybe` is not a valid bool literal, expected one of"):
        runopt(None, bool, False, "").cast_to_type("maybe")
    with pytest.raises(ValueError, match="^runopt's opt_type cannot be `None`$"):
        runopt(None, None, False, "").cast_to_type("x")
    assert runopt(None, list[str], False, "").cast_to_type("a,b;;c,") == ["a", "b", "c"]
    assert runopt(None, dict[str, str], False, "").cast_to_type("A:1;B:x:y") == {
        "A": "1",
        "B": "x:y",
    }
    assert runopt(None, int, False, "").cast_to_type("3") == 3
    assert runopt(None, float, False, "").cast_to_type("0.5") == 0.5
    r = runopt(None, List[str], False, "")  # noqa: UP006
    assert r.is_type_list_of_str and not r.is_type_dict_of_str


def test_cfg_from_str(opts: runopts, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        cfg = opts.cfg_from_str("priority=3,dry=yes,tags=a,b,env=A:1;B:2,bogus=1,logDir=/x")
    assert cfg == {
        "priority": 3,
        "dry": True,
        "tags": ["a", "b"],
        "env": {"A": "1", "B": "2"},
        "log_dir": "/x",
    }
    assert "unknown run option passed to scheduler: bogus=1" in caplog.text
    assert opts.cfg_from_str("") == {}


def test_cfg_from_json_repr(opts: runopts) -> None:
    cfg = opts.cfg_from_json_repr(
        '{"priority": 2, "tags": [1, "a"], "env": {"A": 1}, "log_dir": null, "x": 1}'
    )
    assert cfg == {"priority": 2, "tags": ["1", "a"], "env": {"A": "1"}, "log_dir": None}


def test_repr(opts: runopts) -> None:
    small = runopts()
    small.add("run_as", str, "user", required=True)
    small.add("priority", int, "prio", default=1)
    assert repr(small) == (
        "    usage:\n"
        "        run_as=RUN_AS,[priority=PRIORITY]\n"
        "\n"
        "    required arguments:\n"
        "        run_as=RUN_AS (str)\n"
        "            user\n"
        "\n"
        "    optional arguments:\n"
        "        priority=PRIORITY (int, 1)\n"
        "            prio"
    )
    only_optional = runopts()
    only_optional.add("a", str, "h")
    assert "required arguments" not in repr(only_optional)
    assert repr(runopts()) == "    usage:\n        "
