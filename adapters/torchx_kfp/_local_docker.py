"""kfp.local's DockerRunner, keeping a task's logs and exit status however fast it ends.

kfp.local (2.17) starts each task's container with ``auto_remove=True`` and then streams its
logs and waits for it: a container that ends before that loses its logs, and its status is
read as success when the container is already gone (a fast ``exit 3`` passes). This
replacement starts the container without auto-removal, streams its logs to the end, reads
the real exit status and then removes it (also when interrupted, so nothing is left running).
"""

from __future__ import annotations

from typing import Any

__all__ = ["keep_task_logs_and_status"]


def _run_container(
    client: Any, image: str, command: list[str], volumes: dict[str, Any], **run_args: Any
) -> int:
    """Runs one task's container to its end: its logs printed, its exit status returned."""
    from kfp.local import docker_task_handler as handler  # lazy: kfp.local, local runs only

    image = handler.add_latest_tag_if_not_present(image=image)
    known = any(image in (i.tags + i.attrs.get("RepoDigests", [])) for i in client.images.list())
    if known:
        print(f"Found image {image!r}\n")
    else:
        print(f"Pulling image {image!r}")
        client.images.pull(image)
        print("Image pull complete\n")
    run_args.pop("auto_remove", None)
    container = client.containers.run(
        image=image, command=command, detach=True, stdout=True, stderr=True, volumes=volumes,
        **run_args,
    )  # fmt: skip
    try:
        for chunk in container.logs(stream=True, follow=True):
            print(chunk.decode(errors="replace"), end="", flush=True)
        return int(container.wait()["StatusCode"])
    finally:
        container.remove(force=True)


def keep_task_logs_and_status() -> None:
    """Makes kfp.local's DockerRunner use :func:`_run_container` (idempotent)."""
    from kfp.local import docker_task_handler as handler  # lazy: as above

    handler.run_docker_container = _run_container
