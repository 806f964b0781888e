"""``StructuredOpts``: field help by name (``get_docstrings``), nested groups (unset, camelCase
prefixes) and classes whose annotations name function-local classes."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from torchx.schedulers.api import StructuredOpts


@dataclass
class Leaf(StructuredOpts):
    x: str | None = None
    """the x."""

    y: int = 2
    """the y."""


@dataclass
class Tree(StructuredOpts):
    name: str = "n"
    """the name."""

    leaf_group: Leaf = field(default_factory=Leaf)
    """a group."""


@dataclass
class MaybeTree(StructuredOpts):
    name: str = "n"
    leaf: Leaf | None = None


def test_get_docstrings_by_field_name_with_nested_keys() -> None:
    docs = Tree.get_docstrings()
    assert docs["name"] == "the name."
    assert docs["leaf_group.x"] == "the x."
    assert docs["leaf_group.y"] == "the y."


def test_unset_optional_group_has_no_keys() -> None:
    opts = MaybeTree()
    assert list(opts) == ["name"] and len(opts) == 1
    assert "leaf.x" not in opts and opts.get("leaf.x") is None
    assert "leaf" not in opts
    set_group = MaybeTree(leaf=Leaf(x="v"))
    assert set_group["leaf.x"] == "v"


def test_nested_key_with_camel_case_prefix() -> None:
    opts = Tree(leaf_group=Leaf(x="v"))
    assert opts["leaf_group.x"] == "v"
    assert opts["leafGroup.x"] == "v"
    with pytest.raises(KeyError):
        opts["leafGroup.nope"]
    with pytest.raises(KeyError):
        opts["name.x"]


def test_classes_local_to_a_function() -> None:
    @dataclass
    class Child(StructuredOpts):
        val: str = "d"

    @dataclass
    class Parent(StructuredOpts):
        child_group: Child = field(default_factory=Child)

    opts = Parent(child_group=Child(val="c"))
    assert opts["childGroup.val"] == "c"
    assert dict(opts) == {"child_group.val": "c"}
