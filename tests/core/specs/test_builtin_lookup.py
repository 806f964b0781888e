"""The one-module lookup of a builtin component gives what the full walk gives."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from torchx.specs import finder
from torchx.specs._builtin_lookup import find_builtin as _find_builtin
from torchx.util.session import _uuid4


def find_builtin(name: str, validators: None) -> finder._Component | None:
    """The lookup with the finder's arguments, as ``finder._find_component`` calls it."""
    return _find_builtin(
        name,
        base_module=finder._BUILTINS_MODULE,
        skip=finder._NOT_COMPONENT_MODULES,
        entry_point_group=finder._ENTRY_POINT_GROUP,
        components_in=lambda m, base: finder.ModuleComponentsFinder(base, "")._components_in(
            m, base, validators
        ),
    )


def test_every_builtin_is_found_as_the_walk_finds_it() -> None:
    walked = finder._find_components(None)
    assert walked
    for name, component in walked.items():
        found = find_builtin(name, None)
        assert found is not None, name
        assert (found.name, found.fn, found.validation_errors, found.description) == (
            component.name,
            component.fn,
            component.validation_errors,
            component.description,
        )


@pytest.mark.parametrize(
    "name", ["utils.nope", "utils", "component_test_base.x", "_ddp.x", "utils.sh-x", "nope.fn"]
)
def test_the_walk_decides_the_rest(name: str) -> None:
    assert find_builtin(name, None) is None


def test_entry_point_components_replace_the_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx.util import entrypoints

    monkeypatch.setattr(entrypoints, "load_group", lambda group, default=None: {"x": object})
    assert find_builtin("utils.sh", None) is None


def test_running_utils_sh_imports_no_other_builtin_module() -> None:
    code = (
        "import sys; from torchx.specs.finder import get_component;"
        " assert get_component('utils.sh').name == 'utils.sh';"
        " print(sorted(m for m in sys.modules if m.startswith('torchx.components.')"
        " and not m.rpartition('.')[2].startswith('_')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['torchx.components.utils']"


def test_session_uuid4_is_a_version_4_uuid() -> None:
    for _ in range(200):
        text = _uuid4()
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122
