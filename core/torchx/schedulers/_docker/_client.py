"""The engine facade of ``local_docker``: containers, networks and markers over the ``docker`` SDK.

:class:`DockerEngine` extends the image workspace's
:class:`~torchx.workspace.docker_images.DockerImages` (one injected or lazily created
``docker.DockerClient``, SDK errors turned into one-line exceptions) with what the scheduler
needs; the scheduler calls only this facade, and shares it with its workspace.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Optional

import docker
import docker.errors

from torchx.schedulers._docker._request import DockerContainer
from torchx.workspace.docker_images import (
    DEFAULT_SOCKET,
    DockerImages,
    DockerUnavailableError,
    ImageBuildError,
    short_error,
    unreachable_message,
)

__all__ = [
    "DEFAULT_SOCKET",
    "DockerEngine",
    "DockerUnavailableError",
    "ImageBuildError",
    "unreachable_message",
]

_CHANGE_EVENTS = ("start", "die", "pause", "unpause", "destroy")
_EXITED = re.compile(r"^\w+ \((-?\d+)\)")


class DockerEngine(DockerImages):
    """What ``local_docker`` needs from a Docker engine: images (inherited), containers, networks.

    Args:
        client: a ``docker.DockerClient``; None connects from the environment on first use.
    """

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
            raise RuntimeError(f"could not start container {name}: {short_error(e)}") from None
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
