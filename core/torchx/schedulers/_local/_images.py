"""Image providers of ``local_cwd``: where a role's image lives on the local host."""

from __future__ import annotations

import abc
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from torchx.specs.api import Role

__all__ = ["CWDImageProvider", "ImageProvider", "LocalDirectoryImageProvider", "ReplicaParam"]


@dataclass
class ReplicaParam:
    """How to start one replica: argv, environment, log files and working dir.

    ``env`` holds only what the AppDef and torchx set: the replica starts with the
    launcher's environment updated by ``env`` (whose ``PATH`` goes before the inherited
    ``PATH``), so nothing inherited (tokens, passwords) is written to ``request.json`` or
    printed by a dry run.
    """

    args: list[str]
    env: dict[str, str]
    stdout: Optional[str] = None
    stderr: Optional[str] = None
    combined: Optional[str] = None
    cwd: Optional[str] = None
    error_file: Optional[str] = None


class ImageProvider(abc.ABC):
    """Resolves a role's image to a local directory (the ``img_root`` macro)."""

    @abc.abstractmethod
    def fetch(self, image: str) -> str:
        """Make ``image`` available locally and return its root directory."""

    def fetch_role(self, role: Role) -> str:
        """Return the image root of ``role`` (``fetch(role.image)``)."""
        return self.fetch(role.image)

    def get_cwd(self, image: str) -> Optional[str]:
        """Return the working directory replicas of ``image`` start in (None: inherit)."""
        return None

    def get_role_cwd(self, role: Role) -> Optional[str]:
        """Return the working directory replicas of ``role`` start in (``get_cwd(image)``)."""
        return self.get_cwd(role.image)

    def get_entrypoint(self, img_root: str, role: Role) -> str:
        """Return the command replicas of ``role`` execute."""
        return role.entrypoint

    def get_replica_param(
        self,
        img_root: str,
        role: Role,
        stdout: Optional[str] = None,
        stderr: Optional[str] = None,
        combined: Optional[str] = None,
    ) -> ReplicaParam:
        """Returns how to start a replica of ``role`` (TorchX's provider API).

        Args:
            img_root: ``fetch(role.image)``, fetched once per role.
            role: the (macro-substituted) role.
            stdout: the replica's stdout file, if any.
            stderr: the replica's stderr file, if any.
            combined: the replica's combined stdout+stderr file, if any.

        Returns:
            The entrypoint and args, the role's env, the log files and ``get_cwd(role.image)``.
        """
        return ReplicaParam(
            [self.get_entrypoint(img_root, role), *role.args],
            dict(role.env),
            stdout,
            stderr,
            combined,
            self.get_cwd(role.image),
        )


class CWDImageProvider(ImageProvider):
    """Ignores the image: the root and the working directory are the current directory.

    A role whose workspace is one local directory (``--workspace DIR``, or the Airflow
    operator's ``workspace=``) runs in that directory instead.

    Args:
        cfg: the run config (unused).
    """

    def __init__(self, cfg: Optional[Mapping[str, Any]] = None) -> None:
        self._cfg = cfg

    def fetch(self, image: str) -> str:
        """Return the current working directory."""
        return os.getcwd()

    def get_cwd(self, image: str) -> Optional[str]:
        """Return the current working directory."""
        return os.getcwd()

    def fetch_role(self, role: Role) -> str:
        """Return the role's workspace directory, else the current working directory."""
        return _workspace_dir(role) or os.getcwd()

    def get_role_cwd(self, role: Role) -> Optional[str]:
        """Return the role's workspace directory, else the current working directory."""
        return _workspace_dir(role) or os.getcwd()


def _workspace_dir(role: Role) -> Optional[str]:
    ws = role.workspace
    if ws and ws.is_unmapped_single_project():
        return os.path.abspath(next(iter(ws.projects)))
    return None


class LocalDirectoryImageProvider(ImageProvider):
    """Treats the image as an existing local directory, which is also the working directory.

    Args:
        cfg: the run config (unused).
    """

    def __init__(self, cfg: Optional[Mapping[str, Any]] = None) -> None:
        self._cfg = cfg

    def fetch(self, image: str) -> str:
        """Validate that ``image`` is a directory and return it.

        Raises:
            ValueError: ``image`` does not exist or is not a directory.
        """
        if not os.path.isdir(image):
            raise ValueError(f"Invalid image name: {image}, does not exist or is not a directory")
        return image

    def get_cwd(self, image: str) -> Optional[str]:
        """Return the image directory."""
        return image

    def get_entrypoint(self, img_root: str, role: Role) -> str:
        """Return the entrypoint resolved inside the image directory when it is there.

        Otherwise the entrypoint as given (e.g. ``python``), found on ``PATH`` (which starts
        with the image directory) as TorchX does.
        """
        inside = os.path.join(img_root, role.entrypoint)
        return inside if os.path.exists(inside) else role.entrypoint
