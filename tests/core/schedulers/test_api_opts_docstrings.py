"""Field help of ``StructuredOpts``: read from the module's syntax tree, as ``inspect`` finds it."""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass

import pytest

from torchx.schedulers import _api_opts
from torchx.schedulers._api_opts import StructuredOpts

FLAG = True


class Outer:
    @dataclass
    class Inner(StructuredOpts):
        a: int = 1
        """help of a"""


if FLAG:

    @dataclass
    class InIf(StructuredOpts):
        b: str = ""
        """help of b,
        two lines"""

        c: bool = False


def _defined_in_a_function() -> type[StructuredOpts]:
    @dataclass
    class Local(StructuredOpts):
        d: int = 0
        """help of d"""

    return Local


def _via_getsource(klass: type) -> ast.AST:
    return ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0]


def _same_class(node: ast.AST | None, klass: type) -> bool:
    """Same statement as inspect's: same line span and names (string literals were dedented)."""
    expected = _via_getsource(klass)
    assert isinstance(node, ast.ClassDef) and isinstance(expected, ast.ClassDef)
    lines = inspect.getsourcelines(klass)[1]
    first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
    names = [getattr(getattr(s, "target", None), "id", None) for s in node.body]
    local = "<locals>" in klass.__qualname__  # parsed from its own source: lines start at 1
    return (
        (local or first == lines)
        and node.name == expected.name
        and names == [getattr(getattr(s, "target", None), "id", None) for s in expected.body]
    )


@pytest.mark.parametrize(
    "klass",
    [Outer.Inner, InIf, _defined_in_a_function()],
    ids=["nested", "in-if", "local"],
)
def test_class_node_is_the_one_inspect_finds(klass: type) -> None:
    assert _same_class(_api_opts._class_node(klass), klass)


def test_help_texts() -> None:
    assert _api_opts._class_docstrings(Outer.Inner) == {"a": "help of a"}
    assert _api_opts._class_docstrings(InIf) == {"b": "help of b,\ntwo lines"}
    assert _api_opts._class_docstrings(_defined_in_a_function()) == {"d": "help of d"}


def test_local_cwd_opts_help() -> None:
    from torchx.schedulers._local._opts import Opts

    assert _same_class(_api_opts._class_node(Opts), Opts)
    opts = Opts.as_runopts()
    assert opts.get("detach") is not None
    assert "outlive" not in repr(opts) and "keeps running" in repr(opts)
