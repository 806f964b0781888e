"""The one module that imports the ``docker`` SDK: a small engine facade for ``local_docker``.

:class:`DockerEngine` wraps an injected (or lazily created) ``docker.DockerClient`` and turns
SDK errors into one-line exceptions. The scheduler and the image workspace only call this facade,
so they import ``docker`` nowhere.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Optional

import docker
import docker.errors
from requests.exceptions import RequestException  # type: ignore[import-untyped]

from torchx.schedulers._docker._request import DockerContainer

__all__ = [
    "DEFAULT_SOCKET",
    "DockerEngine",
    "DockerUnavailableError",
    "ImageBuildError",
    "unreachable_message",
]

DEFAULT_SOCKET = "unix:///var/run/docker.sock"
_CHANGE_EVENTS = ("start", "die", "pause", "unpause", "destroy")
_EXITED = re.compile(r"^\w+ \((-?\d+)\)")


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


def _short(e: BaseException) -> str:
    return " ".join(str(e).split())[:300]


class DockerEngine:
    """What ``local_docker`` and ``DockerWorkspaceMixin`` need from a Docker engine.

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
                raise DockerUnavailableError(unreachable_message(_short(e))) from None
        if not self._checked:
            try:
                self._client.ping()
            except (docker.errors.DockerException, OSError, RequestException) as e:  # unreachable
                raise DockerUnavailableError(unreachable_message(_short(e))) from None
            self._checked = True
        return self._client

    def engine_id(self) -> str:
        """The engine's own ID (``docker info``): the same for every client of that engine."""
        return str(self.client.info()["ID"])

    # -- images --------------------------------------------------------------------------

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
                f"image `{image}` is not on the Docker engine and pulling it failed ({_short(e)});"
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
                raise ImageBuildError(_with_tail("image build failed", log))
        if not image_id:
            raise ImageBuildError(_with_tail("image build produced no image", log))
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
                    raise ImageBuildError(_with_tail("failed to push docker image", log))
                if "status" in chunk:
                    log.append(str(chunk["status"]))
        except docker.errors.DockerException as e:
            log.append(_short(e))
            raise ImageBuildError(_with_tail("failed to push docker image", log)) from None

    def remove_image(self, image: str) -> None:
        """Removes an image tag (or id); a missing image is ignored."""
        try:
            self.client.images.remove(image, noprune=False)
        except docker.errors.NotFound:
            pass

    # -- containers and networks ---------------------------------------------------------

    def ensure_network(self, name: str, labels: Mapping[str, str]) -> None:
        """Creates the bridge network ``name`` unless it exists."""
        if self.client.networks.list(names=[name]):
            return
        try:
            self.client.networks.create(name, driver="bridge", labels=dict(labels))
        except docker.errors.APIError as e:
            if e.status_code != 409:  # created concurrently
                raise

    def remove_networks(self, label: str) -> None:
        """Removes the networks carrying ``label`` (``key=value``)."""
        for net in self.client.networks.list(filters={"label": label}):
            try:
                net.remove()
            except docker.errors.NotFound:
                pass

    def run(self, container: DockerContainer) -> str:
        """Creates and starts one container; returns its id.

        Raises:
            RuntimeError: the engine refused the container (one line).
        """
        try:
            c = self.client.containers.run(
                container.image, container.command, detach=True, **container.kwargs
            )
        except docker.errors.DockerException as e:
            name = container.kwargs.get("name", "")
            raise RuntimeError(f"could not start container {name}: {_short(e)}") from None
        return str(c.id)

    def containers(self, label: str) -> list[dict[str, Any]]:
        """Lists every container (running or not) carrying ``label``, one API call.

        Returns:
            Dicts with ``id``, ``name``, ``status`` (``State``), ``exit_code`` and ``labels``.
        """
        found = self.client.api.containers(all=True, filters={"label": label})
        return [
            {
                "id": c["Id"],
                "name": (c.get("Names") or ["/"])[0].lstrip("/"),
                "status": c.get("State", ""),
                "exit_code": _exit_code(c.get("Status", "")),
                "labels": c.get("Labels") or {},
            }
            for c in found
        ]

    def wait_event(self, label: str, since: float, timeout: float) -> bool:
        """Blocks until a container carrying ``label`` starts, dies, pauses or is removed.

        Events since ``since`` (a Unix time on the engine's clock) count, so a change that
        happened after the caller last looked is not missed.

        Returns:
            True on an event, False when ``timeout`` seconds passed without one.
        """
        until = time.time() + max(0.0, timeout)
        filters = {"type": "container", "label": label, "event": list(_CHANGE_EVENTS)}
        stream = self.client.api.events(
            since=f"{since:.6f}", until=f"{until:.6f}", filters=filters, decode=True
        )
        try:
            for _ in stream:
                return True
            return False
        finally:
            stream.close()

    def restart_count(self, container_id: str) -> int:
        """Returns how often the engine restarted a container (0 if it is gone)."""
        try:
            return int(self.client.api.inspect_container(container_id).get("RestartCount", 0))
        except docker.errors.NotFound:
            return 0

    def stop(self, container_ids: list[str], grace: float) -> None:
        """Stops containers in parallel: SIGTERM, then SIGKILL after ``grace`` seconds."""

        def stop_one(cid: str) -> None:
            try:
                self.client.api.update_container(cid, restart_policy={"Name": "no"})
                self.client.api.stop(cid, timeout=max(0, int(round(grace))))
            except docker.errors.NotFound:
                pass

        if not container_ids:
            return
        with ThreadPoolExecutor(max_workers=min(8, len(container_ids))) as pool:
            list(pool.map(stop_one, container_ids))

    def remove(self, container_ids: list[str]) -> None:
        """Force-removes containers (and their anonymous volumes)."""
        for cid in container_ids:
            try:
                self.client.api.remove_container(cid, force=True, v=True)
            except docker.errors.NotFound:
                pass

    def logs(
        self,
        name: str,
        stdout: bool,
        stderr: bool,
        since: Optional[datetime],
        until: Optional[datetime],
        follow: bool,
    ) -> Iterator[bytes]:
        """Yields a container's log output as byte chunks (following it when ``follow``).

        Raises:
            ValueError: no such container.
        """
        try:
            out = self.client.api.logs(
                name,
                stdout=stdout,
                stderr=stderr,
                stream=follow,
                follow=follow,
                since=since,
                until=until,
            )
        except docker.errors.NotFound:
            raise ValueError(f"no container {name}: no such role or replica") from None
        if isinstance(out, bytes):
            yield out
        else:
            yield from out

    # -- cancel markers --------------------------------------------------------------------

    def create_marker(self, name: str, labels: Mapping[str, str]) -> None:
        """Creates an empty labelled volume that marks an app (e.g. as cancelled)."""
        self.client.volumes.create(name=name, labels=dict(labels))

    def markers(self, label: str) -> list[dict[str, Any]]:
        """Returns the labels of the marker volumes carrying ``label``."""
        vols = self.client.api.volumes(filters={"label": label}).get("Volumes") or []
        return [v.get("Labels") or {} for v in vols]

    def remove_markers(self, label: str | list[str]) -> None:
        """Removes the marker volumes carrying ``label`` (every one of a list)."""
        for vol in self.client.volumes.list(filters={"label": label}):
            try:
                vol.remove(force=True)
            except docker.errors.NotFound:
                pass


def _exit_code(status: str) -> int:
    """Parses the exit code out of a container list ``Status`` ("Exited (3) 2 seconds ago")."""
    m = _EXITED.match(status)
    return int(m.group(1)) if m else 0


def _with_tail(what: str, log: list[str], n: int = 5) -> str:
    tail = " | ".join(line.strip() for line in log[-n:] if line.strip())
    return f"{what}: {tail}" if tail else what
