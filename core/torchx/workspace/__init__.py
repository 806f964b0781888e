"""Workspaces: ship local code with a job (prototype API).

``WorkspaceMixin`` is mixed into schedulers that can build a role's workspace;
``walk_workspace`` walks a workspace honouring its ``.torchxignore`` file. The
``Workspace`` type itself lives in :mod:`torchx.specs`.
"""

from __future__ import annotations

from torchx.workspace.api import WorkspaceMixin, walk_workspace

__all__ = ["WorkspaceMixin", "walk_workspace"]
