"""Image workspaces: build a role's workspace into a Docker image, and push it (§7).

The build context is the workspace directory minus what ``.dockerignore`` and ``.torchxignore``
exclude. ``Dockerfile.torchx`` in the workspace is used when present; otherwise the context gets
``ARG IMAGE`` / ``FROM $IMAGE`` / ``COPY . .``, i.e. the role's image plus the files. Build args
``IMAGE`` (the role's image) and ``WORKSPACE`` (the workspace path) are passed either way, and the
resulting ``sha256:`` image id becomes ``role.image``. With the run option ``image_repo`` the
images are tagged ``{image_repo}:{hash}`` and pushed when the app is scheduled.

The engine is reached through :mod:`torchx.workspace.docker_images` (it imports the ``docker``
SDK), created lazily; ``local_docker`` passes its own engine (a subclass) to share one client.
"""

from __future__ import annotations

import io
import logging
import os
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from typing import IO, TYPE_CHECKING, Any, Optional

from torchx.specs.api import AppDef, CfgVal, Role, runopts
from torchx.version import __version__
from torchx.workspace._ignore import IgnoreRules
from torchx.workspace.api import WorkspaceMixin, walk_workspace

if TYPE_CHECKING:
    from torchx.workspace.docker_images import DockerImages

__all__ = [
    "DEFAULT_DOCKERFILE",
    "TORCHX_DOCKERFILE",
    "AppDef",
    "CfgVal",
    "DockerWorkspaceMixin",
    "Role",
    "WorkspaceMixin",
    "build_context",
    "print_push_events",
    "runopts",
    "walk_workspace",
]

logger: logging.Logger = logging.getLogger(__name__)

TORCHX_DOCKERFILE = "Dockerfile.torchx"
DEFAULT_DOCKERFILE = b"""
ARG IMAGE
FROM $IMAGE

COPY . .
"""
_IGNORE_FILES = (".dockerignore", ".torchxignore")


class DockerWorkspaceMixin(WorkspaceMixin[dict[str, tuple[str, str]]]):
    """Builds each role's workspace into an image on a Docker engine (``local_docker``, k8s).

    Args:
        docker_client: a ``docker.DockerClient``; default: from the environment on first use.
        engine: an existing :class:`~torchx.workspace.docker_images.DockerImages` to share
            (``local_docker`` passes its engine).
    """

    LABEL_VERSION: str = "torchx.pytorch.org/version"

    def __init__(
        self,
        *args: Any,
        docker_client: Optional[Any] = None,
        engine: Optional[DockerImages] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.__docker_client = docker_client
        self.__engine = engine

    def _workspace_engine(self) -> DockerImages:
        if self.__engine is None:
            from torchx.workspace.docker_images import (  # lazy: docker SDK ~170 ms; optional extra
                DockerImages,
            )

            self.__engine = DockerImages(self.__docker_client)
        return self.__engine

    def workspace_opts(self) -> runopts:
        """Returns the ``image_repo`` and ``quiet`` run options."""
        opts = runopts()
        opts.add(
            "image_repo",
            type_=str,
            help="(remote jobs) the image repository to use when pushing patched images, must have"
            " push access. Ex: example.com/your/container",
        )
        opts.add(
            "quiet",
            type_=bool,
            default=False,
            help="whether to suppress verbose output for image building. Defaults to ``False``.",
        )
        return opts

    def caching_build_workspace_and_update_role(
        self, role: Role, cfg: Mapping[str, CfgVal], build_cache: dict[object, object]
    ) -> None:
        """Builds ``role.workspace`` on top of ``role.image`` and sets ``role.image`` to the result.

        Roles with the same workspace and image share one build (``build_cache``).

        Raises:
            ValueError: the workspace directory does not exist.
            ImageBuildError: the build failed (the message ends with the log's last lines).
        """
        workspace = role.workspace
        if not workspace:
            return
        key = ("docker", str(workspace), role.image)
        cached = build_cache.get(key)
        if isinstance(cached, str):
            role.image = cached
            return
        if workspace.is_unmapped_single_project():
            path = os.path.expanduser(next(iter(workspace.projects)))
            _check_dir(path)
            role.image = self._build(role.image, path, cfg)
        else:
            for src in workspace.projects:
                if not os.path.exists(os.path.expanduser(src)):
                    raise ValueError(f"workspace path `{src}` does not exist; fix the workspace")
            with tempfile.TemporaryDirectory(suffix="torchx_workspace_") as tmp:
                workspace.merge_into(tmp)
                role.image = self._build(role.image, tmp, cfg)
        build_cache[key] = role.image

    def build_workspace_and_update_role(
        self, role: Role, workspace: str, cfg: Mapping[str, CfgVal]
    ) -> None:
        """Builds the workspace directory ``workspace`` and updates ``role.image``."""
        _check_dir(workspace)
        role.image = self._build(role.image, workspace, cfg)

    def _build(self, image: str, path: str, cfg: Mapping[str, CfgVal]) -> str:
        engine = self._workspace_engine()
        if not image.startswith("sha256:") and engine.image_id(image) is None:
            try:
                engine.ensure_image(image)
            except RuntimeError as e:
                logger.warning("%s", e)
        if not _has_content(path):
            logger.info("workspace %s has no files to add: using %s as it is", path, image)
            return image
        context = build_context(path)
        image_id, _ = engine.build(
            context,
            buildargs={"IMAGE": image, "WORKSPACE": path},
            labels={self.LABEL_VERSION: _version()},
            quiet=bool(cfg.get("quiet")),
        )
        logger.info("built image %s from workspace %s", image_id, path)
        return image_id

    def dryrun_push_images(
        self, app: AppDef, cfg: Mapping[str, CfgVal]
    ) -> dict[str, tuple[str, str]]:
        """Renames each role's built ``sha256:`` image to ``{image_repo}:{hash}``.

        Returns:
            ``{local image id: (repo, tag)}`` to push.

        Raises:
            KeyError: a role has a locally built image and ``image_repo`` is not set.
        """
        repo = cfg.get("image_repo")
        images: dict[str, tuple[str, str]] = {}
        for role in app.roles:
            if not role.image.startswith("sha256:"):
                continue
            if not repo:
                raise KeyError(
                    "must specify the image repository via `image_repo` config to be able to"
                    f" upload local image {role.image}"
                )
            tag = role.image.removeprefix("sha256:")
            images[role.image] = (str(repo), tag)
            role.image = f"{repo}:{tag}"
        return images

    def push_images(self, images_to_push: dict[str, tuple[str, str]]) -> None:
        """Tags and pushes the images planned by :meth:`dryrun_push_images`.

        Raises:
            ImageBuildError: ``failed to push docker image: ...`` with the push log's last lines.
        """
        engine = self._workspace_engine()
        for local, (repo, tag) in images_to_push.items():
            logger.info("pushing image %s:%s", repo, tag)
            engine.push(local, repo, tag)


def print_push_events(events: Iterator[Mapping[str, Any]], stream: Any = None) -> None:
    """Prints the status lines of a docker push event stream (TorchX helper).

    Args:
        events: decoded push events.
        stream: where to print (default stderr).
    """
    out = stream or sys.stderr
    for event in events:
        if "error" in event:
            raise RuntimeError(f"failed to push docker image: {event['error']}")
        status = event.get("status")
        if status:
            print(f"{event.get('id', '')} {status} {event.get('progress', '')}".strip(), file=out)


def _check_dir(path: str) -> None:
    if not os.path.isdir(path):
        raise ValueError(
            f"workspace directory `{path}` does not exist or is not a directory;"
            " pass an existing directory (e.g. --workspace .)"
        )


def _version() -> str:
    return __version__


def _ignore_rules(path: str) -> IgnoreRules:
    lines: list[str] = []
    for name in _IGNORE_FILES:
        p = os.path.join(path, name)
        if os.path.isfile(p):
            with open(p, encoding="utf-8") as f:
                lines.extend(f.read().splitlines())
    return IgnoreRules(lines)


def build_context(path: str) -> IO[bytes]:
    """Returns the tar build context of a workspace directory.

    Files excluded by ``.dockerignore`` or ``.torchxignore`` (the two files' patterns in that
    order, the last match winning) are left out; without ``Dockerfile.torchx`` the default one
    is added.

    Args:
        path: the workspace directory.
    """
    rules = _ignore_rules(path)
    buf = tempfile.SpooledTemporaryFile(max_size=64 << 20)  # noqa: SIM115 (returned open)
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for dirpath, dirnames, filenames in os.walk(path):
            rel_dir = os.path.relpath(dirpath, path)
            rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
            if rules and not rules.has_negations:
                dirnames[:] = [d for d in dirnames if not rules.is_ignored(_join(rel_dir, d))]
            for name in sorted(filenames):
                rel = _join(rel_dir, name)
                if not rules.is_ignored(rel):
                    tar.add(os.path.join(dirpath, name), arcname=rel, recursive=False)
        if not os.path.isfile(os.path.join(path, TORCHX_DOCKERFILE)):
            info = tarfile.TarInfo(TORCHX_DOCKERFILE)
            info.size = len(DEFAULT_DOCKERFILE)
            tar.addfile(info, io.BytesIO(DEFAULT_DOCKERFILE))
    buf.seek(0)
    return buf


def _has_content(path: str) -> bool:
    """Whether the workspace adds anything to the image (a file that is not ignored)."""
    rules = _ignore_rules(path)
    for dirpath, _, filenames in os.walk(path):
        rel_dir = os.path.relpath(dirpath, path)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        for name in filenames:
            rel = _join(rel_dir, name)
            if name not in _IGNORE_FILES and not rules.is_ignored(rel):
                return True
    return False


def _join(rel_dir: str, name: str) -> str:
    return f"{rel_dir}/{name}" if rel_dir else name
