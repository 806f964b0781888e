"""DirWorkspaceMixin and TmpDirWorkspaceMixin copy the workspace, honouring .torchxignore."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from torchx.specs.api import Role, Workspace
from torchx.workspace.dir_workspace import DirWorkspaceMixin, TmpDirWorkspaceMixin


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "main.py").write_text("print('hi')")
    (ws / "pkg" / "lib.py").write_text("LIB")
    (ws / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(ws / "run.sh", 0o755)
    (ws / "secret.key").write_text("nope")
    (ws / ".torchxignore").write_text("*.key\n")
    return ws


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_dir_workspace_copies_into_job_dir(workspace: Path, tmp_path: Path) -> None:
    job_dir = tmp_path / "job"
    mixin = DirWorkspaceMixin()
    assert [name for name, _ in mixin.workspace_opts()] == ["job_dir"]
    role = Role("r", "img", workspace=Workspace({str(workspace): ""}))
    mixin.build_workspaces([role], {"job_dir": str(job_dir)})
    assert role.image == str(job_dir)
    assert _files(job_dir) == {".torchxignore", "main.py", "pkg/lib.py", "run.sh"}
    assert (job_dir / "pkg" / "lib.py").read_text() == "LIB"
    assert os.access(job_dir / "run.sh", os.X_OK)


def test_dir_workspace_without_job_dir_does_nothing(workspace: Path) -> None:
    role = Role("r", "img", workspace=Workspace({str(workspace): ""}))
    DirWorkspaceMixin().build_workspaces([role], {})
    assert role.image == "img"


def test_dir_workspace_refuses_existing_job_dir(workspace: Path, tmp_path: Path) -> None:
    role = Role("r", "img", workspace=Workspace({str(workspace): ""}))
    with pytest.raises(FileExistsError, match="already exists"):
        DirWorkspaceMixin().build_workspaces([role], {"job_dir": str(tmp_path)})


def test_tmp_dir_workspace(workspace: Path) -> None:
    role = Role("r", "img", workspace=Workspace({str(workspace): ""}))
    TmpDirWorkspaceMixin().build_workspaces([role], {})
    image = Path(role.image)
    assert image.name.startswith("torchx_workspace")
    assert _files(image) == {".torchxignore", "main.py", "pkg/lib.py", "run.sh"}
