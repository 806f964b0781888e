"""walk_workspace and its .dockerignore-style patterns."""

from __future__ import annotations

from pathlib import Path

import fsspec
import pytest

from torchx.workspace import walk_workspace
from torchx.workspace._ignore import IgnoreRules


def _make_tree(root: Path, files: list[str]) -> None:
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)


def _walked_files(root: Path, ignore_name: str = ".torchxignore") -> set[str]:
    fs = fsspec.filesystem("file")
    found = set()
    for directory, _dirs, files in walk_workspace(fs, str(root), ignore_name):
        rel_dir = Path(directory).relative_to(root)
        for name in files:
            found.add(str(rel_dir / name) if str(rel_dir) != "." else name)
    return found


TREE = [
    "main.py",
    "README.md",
    "Dockerfile.torchx",
    "pkg/mod.py",
    "pkg/mod.pyc",
    "pkg/data/big.bin",
    "pkg/data/keep.bin",
    "build/out.o",
    "top.pyc",
]


def test_walk_without_ignore_file_yields_everything(tmp_path: Path) -> None:
    _make_tree(tmp_path, TREE)
    assert _walked_files(tmp_path) == set(TREE)


def test_dockerignore_semantics(tmp_path: Path) -> None:
    _make_tree(tmp_path, TREE)
    (tmp_path / ".torchxignore").write_text(
        "# comment line\n"
        "build\n"
        "*.pyc  # star does not cross directories\n"
        "pkg/data\n"
        "!pkg/data/keep.bin\n"
        "Dockerfile.torchx\n"
        ".\n"
    )
    assert _walked_files(tmp_path) == {
        ".torchxignore",
        "main.py",
        "README.md",
        "Dockerfile.torchx",  # never ignored
        "pkg/mod.py",
        "pkg/mod.pyc",  # `*.pyc` only matches at the root
        "pkg/data/keep.bin",  # re-included by the later `!` pattern
    }


def test_double_star_and_last_match_wins(tmp_path: Path) -> None:
    _make_tree(tmp_path, TREE)
    (tmp_path / ".torchxignore").write_text("**/*.pyc\n!top.pyc\n*.md\n!README.md\nREADME.md\n")
    assert _walked_files(tmp_path) == set(TREE) - {"pkg/mod.pyc", "README.md"} | {".torchxignore"}


def test_pruned_directories_are_not_descended(tmp_path: Path) -> None:
    _make_tree(tmp_path, TREE)
    (tmp_path / ".torchxignore").write_text("pkg\n")
    fs = fsspec.filesystem("file")
    visited = [d for d, _dirs, _files in walk_workspace(fs, str(tmp_path))]
    assert not [d for d in visited if "pkg" in Path(d).parts]
    dirs_of_root = next(iter(walk_workspace(fs, str(tmp_path))))[1]
    assert sorted(dirs_of_root) == ["build"]


def test_custom_ignore_name(tmp_path: Path) -> None:
    _make_tree(tmp_path, TREE)
    (tmp_path / ".dockerignore").write_text("build/\n")
    assert "build/out.o" not in _walked_files(tmp_path, ".dockerignore")
    assert "build/out.o" in _walked_files(tmp_path)


@pytest.mark.parametrize(
    ("pattern", "path", "ignored"),
    [
        ("/abs/x", "abs/x", True),
        ("a/*/c", "a/b/c", True),
        ("a/*/c", "a/b/d/c", False),
        ("a/**/c", "a/b/d/c", True),
        ("a?c", "abc", True),
        ("a?c", "a/c", False),
        ("[ab]x", "bx", True),
        ("[!ab]x", "bx", False),
        ("dir", "dir/sub/file", True),
    ],
)
def test_pattern_matching(pattern: str, path: str, ignored: bool) -> None:
    assert IgnoreRules([pattern]).is_ignored(path) is ignored


def test_walk_any_fsspec_filesystem_and_relative_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = fsspec.filesystem("memory")
    mem.pipe("/wsmem/keep/a.txt", b"a")
    mem.pipe("/wsmem/drop/b.txt", b"b")
    mem.pipe("/wsmem/.torchxignore", b"drop\n")
    walked = {(d, n) for d, _dirs, files in walk_workspace(mem, "memory://wsmem") for n in files}
    assert walked == {("/wsmem", ".torchxignore"), ("/wsmem/keep", "a.txt")}
    mem.rm("/wsmem", recursive=True)

    _make_tree(tmp_path, ["x/y.txt"])
    monkeypatch.chdir(tmp_path)
    walked_local = [d for d, _dirs, _files in walk_workspace(fsspec.filesystem("file"), "x")]
    assert walked_local == [str(tmp_path / "x")]
