"""WorkspaceMixin defaults and the deprecated builder types."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from torchx.specs.api import CfgVal, Role, Workspace, runopts
from torchx.workspace.api import PkgInfo, WorkspaceBuilder, WorkspaceMixin


class RecordingMixin(WorkspaceMixin[None]):
    def __init__(self) -> None:
        super().__init__()
        self.built: list[tuple[str, str, dict[str, str]]] = []

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        files = {
            str(p.relative_to(workspace)): p.read_text()
            for p in Path(workspace).rglob("*")
            if p.is_file()
        }
        self.built.append((role.name, workspace, files))
        role.image = f"built-{role.name}"


class CachingMixin(WorkspaceMixin[None]):
    def __init__(self) -> None:
        super().__init__()
        self.caches: list[int] = []

    def caching_build_workspace_and_update_role(
        self, role: Role, cfg: Mapping[str, CfgVal], build_cache: dict[object, object]
    ) -> None:
        self.caches.append(id(build_cache))
        key = role.workspace
        if key not in build_cache:
            build_cache[key] = f"image-{len(build_cache)}"
        role.image = str(build_cache[key])


def test_defaults_raise_not_implemented() -> None:
    mixin: WorkspaceMixin[None] = WorkspaceMixin()
    assert len(mixin.workspace_opts()) == 0
    role = Role("r", "img", workspace=Workspace({"/tmp": ""}))
    with pytest.raises(NotImplementedError):
        mixin.build_workspaces([role], {})
    with pytest.raises(NotImplementedError):
        mixin.dryrun_push_images(None, {})  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError):
        mixin.push_images(None)


def test_unmapped_single_project_is_built_in_place(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("A")
    mixin = RecordingMixin()
    roles = [Role("r0", "img", workspace=Workspace({str(tmp_path): ""})), Role("r1", "img")]
    mixin.build_workspaces(roles, {})
    assert mixin.built == [("r0", str(tmp_path), {"a.txt": "A"})]
    assert [r.image for r in roles] == ["built-r0", "img"]


def test_mapped_projects_are_merged_into_a_temp_dir(tmp_path: Path) -> None:
    src1 = tmp_path / "one"
    src2 = tmp_path / "two"
    src1.mkdir()
    src2.mkdir()
    (src1 / "x.py").write_text("X")
    (src2 / "y.py").write_text("Y")
    mixin = RecordingMixin()
    role = Role("r", "img", workspace=Workspace({str(src1): "", str(src2): "sub"}))
    mixin.build_workspaces([role], {})
    ((_, merged_dir, files),) = mixin.built
    assert merged_dir.endswith("torchx_workspace_")
    assert files == {"x.py": "X", "sub/y.py": "Y"}


def test_build_cache_is_shared_within_one_call_only(tmp_path: Path) -> None:
    mixin = CachingMixin()
    ws = Workspace({str(tmp_path): ""})
    roles = [Role("a", "i", workspace=ws), Role("b", "i", workspace=ws)]
    mixin.build_workspaces(roles, {})
    assert roles[0].image == roles[1].image == "image-0"
    assert len(set(mixin.caches)) == 1
    more = [Role("c", "i", workspace=ws)]
    mixin.build_workspaces(more, {})
    assert more[0].image == "image-0"
    assert len(mixin.caches) == 3


def test_workspace_opts_can_be_extended() -> None:
    class WithOpts(WorkspaceMixin[None]):
        def workspace_opts(self) -> runopts:
            opts = runopts()
            opts.add("image_repo", type_=str, help="repo")
            return opts

    assert [name for name, _ in WithOpts().workspace_opts()] == ["image_repo"]


def test_deprecated_types_warn() -> None:
    with pytest.warns(FutureWarning, match="PkgInfo"):
        info = PkgInfo(img="img", lazy_overrides={}, metadata=None)
    assert info.img == "img"

    class Builder(WorkspaceBuilder[None, dict[str, str]]):
        def build_workspace(self, sync: bool = True) -> PkgInfo[None]:
            raise NotImplementedError

    with pytest.warns(FutureWarning, match="WorkspaceBuilder"):
        Builder(cfg={})
