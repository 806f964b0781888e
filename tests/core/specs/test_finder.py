"""Tests for torchx.specs.finder: builtins, entry-point components, file components."""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support import write_dist

import torchx.components
from torchx.specs import finder
from torchx.specs.finder import (
    ComponentNotFoundException,
    ComponentValidationException,
    CustomComponentsFinder,
    ModuleComponentsFinder,
    get_builtin_source,
    get_component,
    get_components,
    is_namespace_package,
    is_package,
    module_relname,
)

BUILTINS = [
    "dist.ddp",
    "dist.spmd",
    "utils.binary",
    "utils.booth",
    "utils.copy",
    "utils.echo",
    "utils.hydra",
    "utils.python",
    "utils.sh",
    "utils.touch",
]

COMPONENT_SRC = '''
from torchx import specs


def good(msg: str = "hi") -> specs.AppDef:
    """A good component.

    Args:
        msg: the message
    """
    return specs.AppDef(name="good", roles=[specs.Role("r", "img", entrypoint="echo", args=[msg])])


def bad(msg) -> specs.AppDef:
    return specs.AppDef(name="bad")
'''


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(finder, "_components", None)
    yield


@pytest.fixture
def fake_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A package `pkg` with comps.py, sub/more.py, _private.py, broken.py and nodir/x.py."""
    name = f"fakecomps_{uuid.uuid4().hex[:8]}"
    root = tmp_path / name
    (root / "sub").mkdir(parents=True)
    (root / "nodir").mkdir()
    (root / "__init__.py").write_text("")
    (root / "comps.py").write_text(COMPONENT_SRC)
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "more.py").write_text(COMPONENT_SRC)
    (root / "_private.py").write_text(COMPONENT_SRC)
    (root / "nodir" / "x.py").write_text(COMPONENT_SRC)
    (root / "broken.py").write_text("raise ImportError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def _use_entry_points(monkeypatch: pytest.MonkeyPatch, mapping: dict[str, str], site: Path) -> None:
    """Installs a real dist-info declaring ``mapping`` in the ``torchx.components`` group."""
    write_dist(site, f"comps_{uuid.uuid4().hex[:8]}", {"torchx.components": mapping})
    monkeypatch.syspath_prepend(str(site))


def test_exactly_ten_builtins() -> None:
    assert sorted(get_components()) == BUILTINS
    assert get_component("dist.ddp").fn is torchx.components.dist.ddp
    assert get_component("utils.echo").description.startswith("Echos a message")


def test_cache_is_module_global(monkeypatch: pytest.MonkeyPatch) -> None:
    get_components()
    assert finder._components is not None and "utils.echo" in finder._components
    finder._components = {}
    assert sorted(get_components()) == BUILTINS  # falsy triggers rediscovery


def test_entry_point_components_hide_builtins(
    fake_package: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _use_entry_points(monkeypatch, {"foo": fake_package}, tmp_path / "eps")
    with pytest.warns(UserWarning, match="broken"):
        components = get_components()
    assert sorted(components) == ["foo.comps.good", "foo.sub.more.good"]
    with pytest.raises(ComponentValidationException) as e:
        get_component("foo.comps.bad")
    assert str(e.value) == (
        "Component foo.comps.bad has validation errors: \n"
        " Missing type annotation for argument 'msg' in function 'bad'"
    )
    with pytest.raises(ComponentNotFoundException):
        get_component("utils.echo")


def test_underscore_alias_has_no_prefix_and_keeps_builtins(
    fake_package: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _use_entry_points(monkeypatch, {"_0": fake_package, "_": "torchx.components"}, tmp_path / "eps")
    with pytest.warns(UserWarning, match="broken"):
        names = sorted(get_components())
    assert names == sorted(BUILTINS + ["comps.good", "sub.more.good"])


def test_entry_point_that_fails_to_load_is_skipped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _use_entry_points(monkeypatch, {"gone": "no_such_module_xyz"}, tmp_path / "eps")
    with pytest.warns(UserWarning, match="gone"):
        assert sorted(get_components()) == BUILTINS


def test_module_finder_on_a_plain_module(fake_package: str) -> None:
    found = ModuleComponentsFinder(f"{fake_package}.comps", "grp").find(None)
    assert sorted(c.name for c in found) == ["grp.bad", "grp.good"]
    good = next(c for c in found if c.fn_name == "good")
    assert good.validation_errors == [] and good.description == "A good component."


def test_file_component(tmp_path: Path) -> None:
    path = tmp_path / "my_comp.py"
    path.write_text(
        textwrap.dedent(
            '''
            from __future__ import annotations
            from torchx import specs

            def comp(where: str = __file__) -> specs.AppDef:
                """Says where it lives."""
                return specs.AppDef(name=where)
            '''
        )
    )
    component = get_component(f"{path}:comp")
    assert component.name == f"{path}:comp"
    assert component.fn().name == str(path)
    assert component.description == "Says where it lives."


def test_file_component_errors(tmp_path: Path) -> None:
    path = tmp_path / "c.py"
    path.write_text(COMPONENT_SRC)
    with pytest.raises(ComponentNotFoundException) as e:
        get_component(f"{path}:nope")
    assert str(e.value) == f"Function nope does not exist in file {path}"
    with pytest.raises(ComponentValidationException):
        get_component(f"{path}:bad")
    for name in ("a:b:c", "a.py:", ":fn"):
        with pytest.raises(ValueError) as ve:
            get_component(name)
        assert str(ve.value) == (
            f"Invalid custom component: {name}, valid template : `FILEPATH`:`FUNCTION_NAME`"
        )
    with pytest.raises(FileNotFoundError):
        CustomComponentsFinder(str(tmp_path / "missing.py"), "fn").find(None)


def test_not_found_message_and_suggestion() -> None:
    with pytest.raises(ComponentNotFoundException) as e:
        get_component("dist.dpp")
    msg = str(e.value)
    assert msg.startswith(
        "Component `dist.dpp` not found. Please make sure it is one of the builtins:"
        " `torchx builtins`. Or registered via `[torchx.components]` entry point"
        " (see: https://meta-pytorch.org/torchx/latest/configure.html)"
    )
    assert "`dist.ddp`" in msg
    assert "\n" not in msg


def test_module_helpers(fake_package: str) -> None:
    import importlib

    pkg = importlib.import_module(fake_package)
    sub = importlib.import_module(f"{fake_package}.sub.more")
    assert module_relname(sub, relative_to=pkg) == "sub.more"
    assert module_relname(pkg, relative_to=pkg) == ""
    with pytest.raises(ValueError):
        module_relname(sub, relative_to=torchx.components)
    assert is_package(pkg) and not is_package(sub)
    assert not is_namespace_package(pkg)
    ns = importlib.import_module(f"{fake_package}.nodir")
    assert is_namespace_package(ns)


def test_get_builtin_source() -> None:
    src = get_builtin_source("utils.echo")
    head, _, body = src.partition("\n\n\n")
    lines = head.splitlines()
    assert lines and all(line.startswith(("import ", "from ")) for line in lines)
    assert "import torchx" in lines
    assert body.startswith("def echo(")
    assert 'return specs.AppDef(\n        name="echo"' in body


def test_builtin_descriptions_are_torchx_texts_and_keep_a_final_period() -> None:
    from torchx.components import utils
    from torchx.specs.file_linter import get_fn_docstring

    assert get_fn_docstring(utils.echo)[0] == "Echos a message to stdout (calls echo)"
    assert get_fn_docstring(utils.touch)[0] == "Touches a file (calls touch)"

    def fn() -> None:
        """Ends with a period.

        More text.
        """

    assert get_fn_docstring(fn)[0] == "Ends with a period.\nMore text."
