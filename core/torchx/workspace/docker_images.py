"""A Docker engine's images (build, pull, push): the image workspace's ``docker`` SDK facade.

:class:`DockerImages` wraps an injected (or lazily created) ``docker.DockerClient`` and turns SDK
errors into one-line exceptions. The ``local_docker`` scheduler's engine facade
(:class:`~torchx.schedulers.docker_scheduler.DockerEngine`) extends it with containers, so the
scheduler and its workspace share one client. Import this module only where the ``docker`` SDK
is needed (it imports it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, Optional

import docker
import docker.errors
from requests.exceptions import RequestException  # type: ignore[import-untyped]

__all__ = [
    "DEFAULT_SOCKET",
    "DockerImages",
    "DockerUnavailableError",
    "ImageBuildError",
    "short_error",
    "unreachable_message",
    "with_tail",
]

DEFAULT_SOCKET = "unix:///var/run/docker.sock"


class DockerUnavailableError(RuntimeError):
    """No Docker engine answers (the message is one line naming ``DOCKER_HOST``)."""


class ImageBuildError(RuntimeError):
    """An image build or push failed (the message ends with the build log's last lines)."""


def unreachable_message(reason: str) -> str:
    """Returns the one-line message for an engine that cannot be reached.

    Args:
        reason: a short reason (the connection error's text).
    """
    host = os.environ.get("DOCKER_HOST")
    where = f"DOCKER_HOST={host}" if host else f"DOCKER_HOST unset, tried {DEFAULT_SOCKET}"
    reason = " ".join(reason.split())[:200]
    return (
        f"cannot reach a Docker engine ({where}): {reason}. Start one (scripts/infra/up.sh) or set"
        " DOCKER_HOST, or run without containers: -s local_cwd"
    )


def short_error(e: BaseException) -> str:
    """Returns ``e``'s message on one line, at most 300 characters."""
    return " ".join(str(e).split())[:300]


class DockerImages:
    """The image side of a Docker engine: what ``DockerWorkspaceMixin`` needs (build, push).

    Args:
        client: a ``docker.DockerClient``; None connects from the environment on first use.
    """

    def __init__(self, client: Optional[Any] = None) -> None:
        self._client = client
        self._injected = client is not None
        self._checked = client is not None

    def close(self) -> None:
        """Closes the SDK client if this facade created it (an injected one is the caller's)."""
        if self._client is not None and not self._injected:
            self._client.close()
            self._client = None
            self._checked = False

    @property
    def client(self) -> Any:
        """The SDK client, connected (and pinged once) on first use.

        Raises:
            DockerUnavailableError: no engine answers.
        """
        if self._client is None:
            try:
                self._client = docker.from_env()
            except docker.errors.DockerException as e:
                raise DockerUnavailableError(unreachable_message(short_error(e))) from None
        if not self._checked:
            try:
                self._client.ping()
            except (docker.errors.DockerException, OSError, RequestException) as e:  # unreachable
                raise DockerUnavailableError(unreachable_message(short_error(e))) from None
            self._checked = True
        return self._client

    def engine_id(self) -> str:
        """The engine's own ID (``docker info``): the same for every client of that engine."""
        return str(self.client.info()["ID"])

    def ensure_image(self, image: str) -> None:
        """Makes sure ``image`` is present, pulling it when missing.

        Raises:
            RuntimeError: the image is missing and cannot be pulled.
        """
        try:
            self.client.images.get(image)
            return
        except docker.errors.ImageNotFound:
            pass
        try:
            self.client.images.pull(image)
        except docker.errors.DockerException as e:
            raise RuntimeError(
                f"image `{image}` is not on the Docker engine and pulling it failed"
                f" ({short_error(e)});"
                " build or load it first (`docker images` lists what is there)"
            ) from None

    def image_id(self, image: str) -> Optional[str]:
        """Returns the id of a local image, or None."""
        try:
            return str(self.client.images.get(image).id)
        except docker.errors.ImageNotFound:
            return None

    def build(
        self, context: Any, buildargs: Mapping[str, str], labels: Mapping[str, str], quiet: bool
    ) -> tuple[str, list[str]]:
        """Builds an image from a tar build context (a file object).

        Returns:
            ``(image id, build log lines)``.

        Raises:
            ImageBuildError: the build failed (with the log's last lines).
        """
        log: list[str] = []
        image_id = ""
        stream = self.client.api.build(
            fileobj=context,
            custom_context=True,
            dockerfile="Dockerfile.torchx",
            buildargs=dict(buildargs),
            labels=dict(labels),
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
        )
        for chunk in stream:
            if "stream" in chunk:
                text = str(chunk["stream"])
                log.extend(line for line in text.splitlines() if line.strip())
                if not quiet:
                    print(text, end="", file=sys.stderr, flush=True)
            if "aux" in chunk and "ID" in chunk["aux"]:
                image_id = str(chunk["aux"]["ID"])
            if "error" in chunk:
                log.append(str(chunk["error"]).strip())
                raise ImageBuildError(with_tail("image build failed", log))
        if not image_id:
            raise ImageBuildError(with_tail("image build produced no image", log))
        return image_id, log

    def push(self, image: str, repo: str, tag: str) -> None:
        """Tags ``image`` as ``repo:tag`` and pushes it.

        Raises:
            ImageBuildError: the push failed (``failed to push docker image: ...``).
        """
        log: list[str] = []
        try:
            self.client.images.get(image).tag(repo, tag=tag)
            for chunk in self.client.api.push(repo, tag=tag, stream=True, decode=True):
                if "error" in chunk:
                    log.append(str(chunk["error"]).strip())
                    raise ImageBuildError(with_tail("failed to push docker image", log))
                if "status" in chunk:
                    log.append(str(chunk["status"]))
        except docker.errors.DockerException as e:
            log.append(short_error(e))
            raise ImageBuildError(with_tail("failed to push docker image", log)) from None

    def remove_image(self, image: str) -> None:
        """Removes an image tag (or id); a missing image is ignored."""
        try:
            self.client.images.remove(image, noprune=False)
        except docker.errors.NotFound:
            pass


def with_tail(what: str, log: list[str], n: int = 5) -> str:
    """Returns ``what`` followed by the last ``n`` non-empty lines of ``log``."""
    tail = " | ".join(line.strip() for line in log[-n:] if line.strip())
    return f"{what}: {tail}" if tail else what
