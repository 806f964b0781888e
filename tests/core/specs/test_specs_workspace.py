from pathlib import Path

from torchx.specs.api import Workspace


def test_bool_eq_hash() -> None:
    assert not Workspace({}) and Workspace({"a": ""})
    assert Workspace({"a": "b"}) == Workspace({"a": "b"})
    assert hash(Workspace({"a": "b", "c": ""})) == hash(Workspace({"c": "", "a": "b"}))
    assert len({Workspace({"a": ""}), Workspace({"a": ""})}) == 1


def test_unmapped_single_project_and_str() -> None:
    assert Workspace({"/p": ""}).is_unmapped_single_project()
    assert not Workspace({"/p": "sub"}).is_unmapped_single_project()
    assert not Workspace({"/p": "", "/q": ""}).is_unmapped_single_project()
    assert str(Workspace({"/p": ""})) == "/p"
    assert str(Workspace({"/p": "sub", "/q": ""})) == "/p:sub;/q"


def test_from_str() -> None:
    assert Workspace.from_str(None) == Workspace({})
    assert Workspace.from_str("") == Workspace({})
    assert Workspace.from_str("/my/proj") == Workspace({"/my/proj": ""})
    assert Workspace.from_str("/a: x\n/b:\n") == Workspace({"/a": "x", "/b": ""})
    assert Workspace.from_str("123") == Workspace({"123": ""})


def test_merge_into(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / "pkg").mkdir(parents=True)
    (proj / "pkg" / "a.py").write_text("a")
    single = tmp_path / "notes.txt"
    single.write_text("n")
    out = tmp_path / "out"
    Workspace({str(proj): "", str(single): "docs", str(proj / "pkg"): "copy/pkg"}).merge_into(out)
    assert (out / "pkg" / "a.py").read_text() == "a"
    assert (out / "docs").read_text() == "n"
    assert (out / "copy" / "pkg" / "a.py").read_text() == "a"
