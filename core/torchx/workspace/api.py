"""Workspace building for schedulers (prototype API, §7 of the reference).

A scheduler that can ship local code with a job mixes in :class:`WorkspaceMixin`.
``Runner.dryrun`` calls :meth:`WorkspaceMixin.build_workspaces` on the roles of the
(copied) AppDef; the mixin turns each role's :class:`torchx.specs.Workspace` into
something the scheduler can run (an image, a directory) and updates the role.
"""

from __future__ import annotations

import abc
import posixpath
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from torchx.specs.api import AppDef, CfgVal, Role, runopts
from torchx.workspace._ignore import IgnoreRules

if TYPE_CHECKING:
    import fsspec

__all__ = [
    "TORCHX_IGNORE",
    "PkgInfo",
    "WorkspaceBuilder",
    "WorkspaceMixin",
    "walk_workspace",
]

TORCHX_IGNORE = ".torchxignore"

T = TypeVar("T")
PackageType = TypeVar("PackageType")
WorkspaceConfigType = TypeVar("WorkspaceConfigType")

_MERGED_WORKSPACE_SUFFIX = "torchx_workspace_"


class WorkspaceMixin(abc.ABC, Generic[T]):
    """Mixin for schedulers that build a role's workspace into something runnable.

    ``T`` is the type of the "images to push" request returned by
    :meth:`dryrun_push_images`. Mix it in before the scheduler base class, e.g.
    ``class MyScheduler(WorkspaceMixin[None], Scheduler[Opts])``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)

    def workspace_opts(self) -> runopts:
        """Returns the run options the workspace build accepts (merged into ``run_opts()``)."""
        return runopts()

    def build_workspaces(self, roles: list[Role], cfg: Mapping[str, CfgVal]) -> None:
        """Builds the workspace of every role that has one, updating the roles in place.

        One build cache is shared by the roles of this call, so builders can reuse a
        result when several roles carry the same workspace.

        Args:
            roles: the roles of the AppDef being submitted.
            cfg: the resolved scheduler run config.
        """
        build_cache: dict[object, object] = {}
        for role in roles:
            if role.workspace:
                self.caching_build_workspace_and_update_role(role, cfg, build_cache)

    def caching_build_workspace_and_update_role(
        self, role: Role, cfg: Mapping[str, CfgVal], build_cache: dict[object, object]
    ) -> None:
        """Builds ``role.workspace`` and updates the role (e.g. ``role.image``).

        The default implementation does not use ``build_cache``. An unmapped single
        project is built from its path; otherwise the projects are first merged into a
        temporary directory. Either way it delegates to the deprecated
        :meth:`build_workspace_and_update_role`.

        Args:
            role: the role whose workspace to build.
            cfg: the resolved scheduler run config.
            build_cache: a cache shared by the roles of one ``build_workspaces`` call.
        """
        workspace = role.workspace
        if not workspace:
            return
        if workspace.is_unmapped_single_project():
            path = next(iter(workspace.projects))
        else:
            import tempfile  # lazy: ~27 ms here, only to merge; run_opts() loads us

            path = tempfile.mkdtemp(suffix=_MERGED_WORKSPACE_SUFFIX)
            workspace.merge_into(path)
        self.build_workspace_and_update_role(role, path, cfg)

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Builds the workspace at path ``workspace`` and updates ``role`` (deprecated hook).

        Args:
            role: the role to update.
            workspace: a local path or fsspec URL holding the workspace files.
            cfg: the resolved scheduler run config.

        Raises:
            NotImplementedError: unless a subclass overrides it.
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not implement build_workspace_and_update_role; "
            "override caching_build_workspace_and_update_role or build_workspace_and_update_role"
        )

    def dryrun_push_images(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> T:
        """Plans pushing the images built for ``app`` without pushing them.

        Args:
            app: the AppDef whose roles reference locally built images.
            cfg: the resolved scheduler run config.

        Raises:
            NotImplementedError: unless a subclass overrides it.
        """
        raise NotImplementedError(f"{type(self).__name__} does not push images")

    def push_images(self, images_to_push: T) -> None:
        """Pushes the images planned by :meth:`dryrun_push_images`.

        Args:
            images_to_push: the value returned by :meth:`dryrun_push_images`.

        Raises:
            NotImplementedError: unless a subclass overrides it.
        """
        raise NotImplementedError(f"{type(self).__name__} does not push images")


@dataclass
class PkgInfo(Generic[PackageType]):
    """Deprecated: the result of a :class:`WorkspaceBuilder` build.

    Attributes:
        img: the image that holds the built workspace.
        lazy_overrides: values to override on the role once the build finished.
        metadata: builder-specific package data.
    """

    img: str
    lazy_overrides: dict[str, Any]
    metadata: PackageType

    def __post_init__(self) -> None:
        warnings.warn(
            "PkgInfo is deprecated and will be removed; use WorkspaceMixin instead",
            FutureWarning,
            stacklevel=3,
        )


@dataclass
class WorkspaceBuilder(Generic[PackageType, WorkspaceConfigType]):
    """Deprecated: builds a workspace into a :class:`PkgInfo`.

    Attributes:
        cfg: the builder configuration.
    """

    cfg: WorkspaceConfigType

    def __post_init__(self) -> None:
        warnings.warn(
            "WorkspaceBuilder is deprecated and will be removed; use WorkspaceMixin instead",
            FutureWarning,
            stacklevel=3,
        )

    @abc.abstractmethod
    def build_workspace(self, sync: bool = True) -> PkgInfo[PackageType]:
        """Builds the workspace.

        Args:
            sync: whether to wait for the build to finish.
        """


def _read_ignore_rules(fs: fsspec.AbstractFileSystem, path: str, ignore_name: str) -> IgnoreRules:
    ignore_path = posixpath.join(path, ignore_name)
    if not fs.exists(ignore_path):
        return IgnoreRules()
    with fs.open(ignore_path, "rt") as f:
        return IgnoreRules(f.read().splitlines())


def walk_workspace(
    fs: fsspec.AbstractFileSystem, path: str, ignore_name: str = TORCHX_IGNORE
) -> Iterator[tuple[str, Iterable[str], Mapping[str, Mapping[str, object]]]]:
    """Walks a workspace like ``fs.walk(path, detail=True)``, skipping ignored entries.

    The ignore file ``{path}/{ignore_name}`` follows ``.dockerignore`` semantics: ``#``
    comments, ``!pattern`` re-includes, the last matching pattern wins, ``**`` spans
    directories, and ``.`` and ``Dockerfile.torchx`` are never ignored.

    Args:
        fs: the fsspec filesystem holding the workspace.
        path: the workspace root on ``fs``.
        ignore_name: the name of the ignore file at the root.

    Yields:
        ``(dir, dir_names, files)`` per visited directory, where ``files`` maps each kept
        file name to its fsspec info dict.
    """
    root = str(fs._strip_protocol(path)).rstrip("/") or "/"
    rules = _read_ignore_rules(fs, root, ignore_name)
    for directory, dirs, files in fs.walk(root, detail=True):
        rel = posixpath.relpath(directory, root) if directory != root else "."
        dir_ignored = rel != "." and rules.is_ignored(rel)
        for name in [d for d in dirs if rules.is_ignored(_join(rel, d))]:
            if not rules.has_negations:
                del dirs[name]  # prune: nothing below can be re-included
        if dir_ignored and not rules.has_negations:
            continue
        kept_files = {n: info for n, info in files.items() if not rules.is_ignored(_join(rel, n))}
        kept_dirs = [d for d in dirs if not rules.is_ignored(_join(rel, d))]
        yield directory, kept_dirs, kept_files


def _join(rel: str, name: str) -> str:
    return name if rel == "." else f"{rel}/{name}"
