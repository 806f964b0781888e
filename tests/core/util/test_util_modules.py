"""torchx.util.modules: load_module and import_attr with real modules on a tmp sys.path."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchx.util.modules import import_attr, load_module


@pytest.fixture
def pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    root = tmp_path / "mods"
    (root / "um_pkg").mkdir(parents=True)
    (root / "um_pkg" / "__init__.py").write_text("")
    (root / "um_pkg" / "good.py").write_text(
        "VALUE = 7\nclass K:\n    def m(self):\n        return 1\n"
    )
    (root / "um_pkg" / "broken_dep.py").write_text("import um_not_installed_dep\nVALUE = 1\n")
    monkeypatch.syspath_prepend(str(root))
    yield "um_pkg"
    for name in [m for m in sys.modules if m.startswith("um_pkg")]:
        del sys.modules[name]


def test_load_module_module_and_attr(pkg: str) -> None:
    mod = load_module("um_pkg.good")
    assert mod is sys.modules["um_pkg.good"]
    assert load_module("um_pkg.good:VALUE") == 7
    assert load_module("um_pkg.good:K.m") is sys.modules["um_pkg.good"].K.m


def test_load_module_missing_gives_none(pkg: str) -> None:
    assert load_module("um_pkg.nope") is None
    assert load_module("um_nope_top.sub:fn") is None
    assert load_module("um_pkg.good:NOPE") is None


def test_load_module_missing_dependency_propagates(pkg: str) -> None:
    with pytest.raises(ModuleNotFoundError, match="um_not_installed_dep"):
        load_module("um_pkg.broken_dep")


def test_import_attr(pkg: str) -> None:
    assert import_attr("um_pkg.good", "VALUE", default=None) == 7
    assert import_attr("um_pkg.nope", "VALUE", default={}) == {}
    assert import_attr("um_pkg.broken_dep", "VALUE", default="d") == "d"
    with pytest.raises(AttributeError):
        import_attr("um_pkg.good", "MISSING_ATTR", default=None)
