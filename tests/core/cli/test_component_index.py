"""The cached component index of ``torchx builtins``: served when valid, dropped when not.

The index is the ``components`` section of the one start-up cache (``_startup_cache``). Every
test *poisons* the stored section (its names replaced by ``poisoned.name``) after a first run: a second run printing the poison proves the cache is read, and a run after a change
printing the real list proves the change invalidated it. Files are backdated so that the
index is not refused as racy (see ``RACY_SECONDS``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _support import run_torchx as torchx
from _support import write_dist

from torchx.cli import _component_index, _startup_cache

POISON = "poisoned.name"
CLI_FROM_C = (
    "import runpy, sys; sys.argv = ['torchx', 'builtins'];"
    " runpy.run_module('torchx.cli.main', run_name='__main__')"
)

COMPONENT = '''
from torchx import specs


def {name}(msg: str = "hi") -> specs.AppDef:
    """A component.

    Args:
        msg: the message
    """
    return specs.AppDef(name="x", roles=[specs.Role("r", "img", entrypoint="echo", args=[msg])])
'''


def _backdate(*roots: Path, age: float = 60.0) -> None:
    """Sets the mtime of ``roots`` and everything under them to ``age`` seconds ago."""
    stamp = time.time() - age
    for root in roots:
        for path in [root, *root.rglob("*")]:
            os.utime(path, (stamp, stamp))


def _index_files() -> list[Path]:
    """The start-up cache files that hold a components section."""
    files = (Path(os.environ["TORCHX_HOME"]) / "cache").glob("startup-*.txt")
    return sorted(f for f in files if "\nsection components\n" in f.read_text())


def rewrite_section(path: Path, name: str, text: str) -> None:
    """Replaces the text of section ``name`` (a regex) of the cache file ``path``."""
    data = path.read_text()
    head = re.compile(rf"^section {name}\n(?:stat .*\n)*text (\d+)\n", re.M)
    pos = 0
    while (m := head.search(data, pos)) is not None:
        end = m.end() + int(m.group(1))
        data = data[: m.start(1)] + f"{len(text)}\n{text}" + data[end:]
        pos = m.start(1) + len(text)
    path.write_text(data)


def _names(env: dict[str, str]) -> list[str]:
    proc = torchx("builtins", env=env)
    assert proc.returncode == 0, proc.stderr
    return [line.split(". ", 1)[1] for line in proc.stdout.splitlines()[1:]]


def _poison() -> None:
    (index,) = _index_files()
    rewrite_section(index, "components", POISON)


def _site(tmp_path: Path, entry_points: dict[str, str]) -> Path:
    """A site dir with package ``flowcomps`` (module ``a``) and its distribution."""
    root = tmp_path / "site"
    pkg = root / "flowcomps"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(COMPONENT.format(name="hello"))
    write_dist(root, "flowcomps", {"torchx.components": entry_points} if entry_points else {})
    return root


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A site dir with package ``flowcomps`` (module ``a``) declared as components ``my``."""
    root = _site(tmp_path, {"my": "flowcomps"})
    _backdate(root)
    return root


def _cached(env: dict[str, str], expected: list[str]) -> None:
    """Runs twice: the real list (and an index stored), then the poisoned index."""
    assert _names(env) == expected
    _poison()
    assert _names(env) == [POISON]


def test_builtins_are_served_from_the_index_without_importing_components() -> None:
    first = torchx("builtins")
    assert first.returncode == 0, first.stderr
    assert len(_index_files()) == 1
    again = torchx("builtins")
    assert again.stdout == first.stdout and again.stderr == first.stderr == ""
    _poison()
    assert _names({}) == [POISON]


def test_changed_component_file_invalidates(site: Path) -> None:
    env = {"PYTHONPATH": str(site)}
    _cached(env, ["my.a.hello"])
    module = site / "flowcomps" / "a.py"
    module.write_text(module.read_text() + COMPONENT.format(name="world"))
    _backdate(module, age=30)  # a different mtime, and not racy: the new result is stored
    assert _names(env) == ["my.a.hello", "my.a.world"]
    _poison()
    assert _names(env) == [POISON]


def test_same_size_edit_with_another_mtime_invalidates(site: Path) -> None:
    env = {"PYTHONPATH": str(site)}
    _cached(env, ["my.a.hello"])
    module = site / "flowcomps" / "a.py"
    module.write_text(module.read_text().replace("hello", "hallo"))
    _backdate(module, age=30)
    assert _names(env) == ["my.a.hallo"]


def test_new_module_in_a_component_package_invalidates(site: Path) -> None:
    env = {"PYTHONPATH": str(site)}
    _cached(env, ["my.a.hello"])
    (site / "flowcomps" / "b.py").write_text(COMPONENT.format(name="bye"))
    assert _names(env) == ["my.a.hello", "my.b.bye"]


def test_new_subpackage_marker_invalidates(site: Path) -> None:
    sub = site / "flowcomps" / "sub"
    sub.mkdir()
    (sub / "c.py").write_text(COMPONENT.format(name="deep"))
    _backdate(site)
    env = {"PYTHONPATH": str(site)}
    _cached(env, ["my.a.hello"])  # no __init__.py: not a package, not searched
    (sub / "__init__.py").write_text("")
    assert _names(env) == ["my.a.hello", "my.sub.c.deep"]


def test_entry_points_edited_in_place_invalidate(site: Path) -> None:
    env = {"PYTHONPATH": str(site)}
    _cached(env, ["my.a.hello"])
    (eps,) = site.glob("*.dist-info/entry_points.txt")
    eps.write_text("[torchx.components]\nyours = flowcomps\n")
    _backdate(eps, age=30)
    assert _names(env) == ["yours.a.hello"]


def test_entry_points_added_to_an_existing_distribution_invalidate(tmp_path: Path) -> None:
    root = _site(tmp_path, {})
    (eps,) = root.glob("*.dist-info/entry_points.txt")
    eps.unlink()  # a distribution without entry points
    _backdate(root)
    env = {"PYTHONPATH": str(root)}
    builtins = _names(env)
    assert "utils.echo" in builtins
    _poison()
    assert _names(env) == [POISON]
    eps.write_text("[torchx.components]\nmy = flowcomps\n")
    _backdate(eps, age=30)
    assert _names(env) == ["my.a.hello"]


def test_uninstalled_and_installed_distributions_invalidate(site: Path, tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(site)}
    _cached(env, ["my.a.hello"])
    (dist,) = site.glob("*.dist-info")
    shutil.rmtree(dist)
    assert "utils.echo" in _names(env)  # back to the builtins
    _backdate(site)
    assert "utils.echo" in _names(env)  # stored again
    _poison()
    assert _names(env) == [POISON]
    write_dist(site, "flowcomps", {"torchx.components": {"again": "flowcomps"}})
    assert _names(env) == ["again.a.hello"]


def test_another_sys_path_is_another_entry(site: Path) -> None:
    _cached({"PYTHONPATH": str(site)}, ["my.a.hello"])
    assert "utils.echo" in _names({})
    assert len(_index_files()) == 2


def test_the_working_directory_on_sys_path_is_part_of_the_key(site: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    _backdate(empty)

    def names_in(cwd: Path) -> list[str]:
        proc = subprocess.run(
            [sys.executable, "-c", CLI_FROM_C],  # sys.path[0] == "": the working directory
            capture_output=True,
            text=True,
            cwd=cwd,
            env={**os.environ, "TORCHXCONFIG": ""},
        )
        assert proc.returncode == 0, proc.stderr
        return [line.split(". ", 1)[1] for line in proc.stdout.splitlines()[1:]]

    assert "utils.echo" in names_in(empty)
    _poison()
    assert names_in(empty) == [POISON]
    assert names_in(site) == ["my.a.hello"]  # the site dir is the cwd: its entry points count


def test_failed_imports_and_racy_files_store_nothing(site: Path) -> None:
    (site / "flowcomps" / "broken.py").write_text("raise ImportError('boom')\n")
    _backdate(site)
    env = {"PYTHONPATH": str(site)}
    proc = torchx("builtins", env=env)
    assert "broken" in proc.stderr and proc.stdout.endswith("my.a.hello\n")
    assert _index_files() == []  # the warning must show on every run
    (site / "flowcomps" / "broken.py").unlink()
    assert _names(env) == ["my.a.hello"]  # the package dir just changed: racy
    assert _index_files() == []


def test_truncated_or_foreign_index_is_ignored(site: Path) -> None:
    env = {"PYTHONPATH": str(site)}
    _cached(env, ["my.a.hello"])
    (index,) = _index_files()
    index.write_text(index.read_text()[:-3])  # truncated
    assert _names(env) == ["my.a.hello"]
    index.write_text("something else\n")
    assert _names(env) == ["my.a.hello"]


def test_store_refuses_racy_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    monkeypatch.setattr(_component_index, "_module_paths", lambda: iter(()))
    monkeypatch.setattr(_startup_cache.stat_cache, "path_entries", lambda: [str(fresh)])
    monkeypatch.setattr(_startup_cache, "_store_enabled", True)
    assert not _component_index.store_names(["x"])  # changed just now
    assert _component_index.load_names() is None
    _backdate(fresh)
    assert _component_index.store_names(["x"])
    assert _component_index.load_names() == ["x"]
    os.utime(fresh)
    assert _component_index.load_names() is None


def test_old_cache_files_are_evicted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = Path(_startup_cache.cache_path()).parent
    cache.mkdir(parents=True)
    for i in range(_startup_cache.MAX_FILES + 3):
        old = cache / f"startup-old{i:02d}.txt"
        old.write_text("x")
        os.utime(old, (1000 + i, 1000 + i))
    (cache / "other.txt").write_text("kept")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    _backdate(fresh)
    monkeypatch.setattr(_component_index, "_module_paths", lambda: iter(()))
    monkeypatch.setattr(_startup_cache.stat_cache, "path_entries", lambda: [str(fresh)])
    monkeypatch.setattr(_startup_cache, "_store_enabled", True)
    assert _component_index.store_names(["x"])
    kept = sorted(p.name for p in cache.glob("startup-*.txt"))
    assert len(kept) == _startup_cache.MAX_FILES
    assert Path(_startup_cache.cache_path()).name in kept
    assert "startup-old00.txt" not in kept and "startup-old18.txt" in kept
    assert (cache / "other.txt").exists()
