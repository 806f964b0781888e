"""torchx.util.entrypoints against real *.dist-info directories on sys.path."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support import write_dist

from torchx.util import entrypoints

MODULE = "ep_test_mod"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    root.mkdir()
    (root / f"{MODULE}.py").write_text(
        "CALLS = []\n"
        "def barn(x=None):\n    CALLS.append(x)\n    return f'barn:{x}'\n"
        "def foo():\n    return 'foobar'\n"
    )
    write_dist(
        root,
        "ep_test_dist",
        {
            "ep.test": {"foo": f"{MODULE}:foo", "barn": f"{MODULE}:barn"},
            "ep.modules": {"mod": MODULE},
        },
    )
    monkeypatch.syspath_prepend(str(root))
    sys.modules.pop(MODULE, None)
    yield root
    sys.modules.pop(MODULE, None)


def test_load_returns_the_target_object(site: Path) -> None:
    fn = entrypoints.load("ep.test", "foo")
    assert fn() == "foobar"
    assert fn.__module__ == MODULE


def test_load_missing_name_returns_default_even_none(site: Path) -> None:
    assert entrypoints.load("ep.test", "nope", default="dflt") == "dflt"
    assert entrypoints.load("ep.test", "nope", default=None) is None
    assert entrypoints.load("no.such.group", "foo", default=42) == 42


def test_load_missing_without_default_raises_with_suggestion(site: Path) -> None:
    with pytest.raises(KeyError, match="Did you mean `barn`"):
        entrypoints.load("ep.test", "bar")
    with pytest.raises(KeyError, match="No entry point `x` in group `no.such.group`"):
        entrypoints.load("no.such.group", "x")


def test_load_group_is_deferred(site: Path) -> None:
    group = entrypoints.load_group("ep.test")
    assert set(group) == {"foo", "barn"}
    assert MODULE not in sys.modules  # nothing imported until called
    assert group["barn"]("hay") == "barn:hay"
    assert sys.modules[MODULE].CALLS == ["hay"]


def test_load_group_module_entry_returns_module(site: Path) -> None:
    group = entrypoints.load_group("ep.modules")
    assert group["mod"]() is sys.modules[MODULE]


def test_load_group_entries_replace_default(site: Path) -> None:
    group = entrypoints.load_group("ep.test", default={"other": print})
    assert set(group) == {"foo", "barn"}


def test_load_group_empty_gives_default_or_none(site: Path) -> None:
    assert entrypoints.load_group("no.such.group") is None
    assert entrypoints.load_group("no.such.group", default={"a": 1}) == {"a": 1}
    assert entrypoints.load_group("no.such.group", default={"a": 1}, skip_defaults=True) is None


def test_distributions_added_after_import_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    late = write_dist(tmp_path / "late", "late_dist", {"g.late": {"p": "os.path:join"}})
    assert entrypoints.load_group("g.late") is None
    monkeypatch.syspath_prepend(str(late))
    assert entrypoints.load("g.late", "p") is __import__("os").path.join
    assert entrypoints.load_group("g.late")["p"]("a", "b") == "a/b"


@pytest.fixture
def _no_custom_finders(monkeypatch: pytest.MonkeyPatch) -> None:
    """Other tests may import ``importlib_metadata``, whose finder makes every answer True."""
    monkeypatch.setattr(entrypoints, "_custom_distribution_finders", lambda: False)


def _set_mtime(path: Path, seconds_ago: float) -> int:
    stamp = time.time() - seconds_ago
    os.utime(path, (stamp, stamp))
    return path.stat().st_mtime_ns


@pytest.mark.usefixtures("_no_custom_finders")
def test_scan_is_reused_until_a_path_directory_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "reused"
    root.mkdir()
    _set_mtime(root, 60)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setattr(entrypoints, "_scanned", None)
    assert not entrypoints.group_may_have_entry_points("g.reused")
    assert entrypoints._scanned is not None  # every path directory is old: kept
    scanned = entrypoints._scanned
    assert not entrypoints.group_may_have_entry_points("g.other")
    assert entrypoints._scanned is scanned  # reused, not rescanned
    write_dist(root, "reused_dist", {"g.reused": {"p": "os.path:join"}})  # root's mtime: now
    assert entrypoints.group_may_have_entry_points("g.reused")
    assert entrypoints.load("g.reused", "p") is os.path.join


@pytest.mark.usefixtures("_no_custom_finders")
def test_recently_changed_directories_are_rescanned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "racy"
    root.mkdir()  # changed just now: within the mtime granularity, a scan is not kept
    monkeypatch.syspath_prepend(str(root))
    before = root.stat().st_mtime_ns
    assert not entrypoints.group_may_have_entry_points("g.racy")
    write_dist(root, "racy_dist", {"g.racy": {"p": "os.path:join"}})
    os.utime(root, ns=(before, before))  # as if both changes fell in the same mtime tick
    assert entrypoints.group_may_have_entry_points("g.racy")


def test_the_importlib_metadata_backport_finder_keeps_the_scan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Airflow imports importlib_metadata, which installs a finder of the same dist-info dirs."""
    importlib_metadata = pytest.importorskip("importlib_metadata")

    class Custom:
        def find_distributions(self, context: object = None) -> list[object]:
            return []

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, importlib_metadata.MetadataPathFinder()])
    assert not entrypoints._custom_distribution_finders()
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Custom()])
    assert entrypoints._custom_distribution_finders()


@pytest.mark.usefixtures("_no_custom_finders")
def test_a_recently_changed_directory_rescans_only_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, racy = tmp_path / "old", tmp_path / "racy_only"
    old.mkdir()
    racy.mkdir()
    write_dist(old, "old_dist", {"g.old": {"p": "os.path:join"}})
    _set_mtime(old, 60)
    monkeypatch.syspath_prepend(str(old))
    monkeypatch.syspath_prepend(str(racy))
    monkeypatch.setattr(entrypoints, "_scanned", None)
    assert entrypoints.group_may_have_entry_points("g.old")
    assert entrypoints._scanned is None  # `racy` changed just now: the whole scan is not kept
    read: list[str] = []
    real = entrypoints._read_entry_points
    monkeypatch.setattr(entrypoints, "_read_entry_points", lambda d: read.append(d) or real(d))
    assert entrypoints.group_may_have_entry_points("g.old")
    assert not [d for d in read if d.startswith(str(old))]  # old's files were not read again
    write_dist(racy, "racy_dist", {"g.racy": {"p": "os.path:join"}})
    assert entrypoints.group_may_have_entry_points("g.racy")
