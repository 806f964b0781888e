"""Directory workspaces: copy the workspace files into a directory that becomes the role image.

Files matching ``.torchxignore`` at the workspace root are skipped (see
:func:`torchx.workspace.api.walk_workspace`).
"""

from __future__ import annotations

import os
import posixpath
import stat
import tempfile
from collections.abc import Mapping

from torchx.specs.api import CfgVal, Role, runopts
from torchx.workspace.api import WorkspaceMixin, walk_workspace

__all__ = ["DirWorkspaceMixin", "TmpDirWorkspaceMixin"]


class DirWorkspaceMixin(WorkspaceMixin[None]):
    """Copies the workspace into the run option ``job_dir`` and uses it as the role image.

    ``job_dir`` must not exist yet; it is created. Without ``job_dir`` nothing is built.
    """

    def workspace_opts(self) -> runopts:
        """Returns the ``job_dir`` run option."""
        opts = runopts()
        opts.add(
            "job_dir",
            type_=str,
            help="directory to place the job code and outputs in; it must not exist and is "
            "created (needed for log_iter)",
        )
        return opts

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Copies ``workspace`` into ``cfg["job_dir"]`` and sets ``role.image`` to it.

        Args:
            role: the role to update.
            workspace: a local path or fsspec URL of the workspace.
            cfg: the resolved run config; ``job_dir`` selects the target directory.

        Raises:
            FileExistsError: if ``job_dir`` already exists.
        """
        job_dir = cfg.get("job_dir")
        if job_dir is None:
            return
        job_dir = str(job_dir)
        if os.path.exists(job_dir):
            raise FileExistsError(
                f"job_dir `{job_dir}` already exists; choose a new directory (it is created)"
            )
        os.makedirs(job_dir)
        _copy_to_dir(workspace, job_dir)
        role.image = job_dir


class TmpDirWorkspaceMixin(WorkspaceMixin[None]):
    """Copies the workspace into a fresh temporary directory and uses it as the role image."""

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Copies ``workspace`` into ``mkdtemp(prefix="torchx_workspace")``; sets ``role.image``.

        Args:
            role: the role to update.
            workspace: a local path or fsspec URL of the workspace.
            cfg: the resolved run config (unused).
        """
        tmpdir = tempfile.mkdtemp(prefix="torchx_workspace")
        _copy_to_dir(workspace, tmpdir)
        role.image = tmpdir


def _copy_to_dir(workspace: str, target: str) -> None:
    """Copies the non-ignored files of a workspace into a local directory.

    Args:
        workspace: a local path or fsspec URL of the workspace.
        target: an existing local directory.
    """
    import fsspec.core  # lazy: fsspec ~70 ms; 'torchx runopts slurm' skips it

    fs, root = fsspec.core.url_to_fs(workspace)
    root = root.rstrip("/") or "/"
    for directory, _dirs, files in walk_workspace(fs, root):
        rel_dir = posixpath.relpath(directory, root) if directory != root else "."
        for name, info in files.items():
            dst = os.path.normpath(os.path.join(target, rel_dir, name))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            fs.get_file(posixpath.join(directory, name), dst)
            _copy_exec_bits(info, dst)


def _copy_exec_bits(info: Mapping[str, object], dst: str) -> None:
    mode = info.get("mode")
    if isinstance(mode, int) and mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH):
        os.chmod(dst, os.stat(dst).st_mode | (mode & 0o111))
