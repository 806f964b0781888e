"""DockerWorkspaceMixin: build context filtering, image builds, push to the local registry."""

from __future__ import annotations

import io
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torchx.specs.api import AppDef, Role, Workspace
from torchx.workspace.docker_workspace import (
    TORCHX_DOCKERFILE,
    DockerWorkspaceMixin,
    build_context,
)

BUSYBOX = "torchx-flow/busybox:latest"


class _Builder(DockerWorkspaceMixin):
    pass


def _names(buf: Any) -> set[str]:
    with tarfile.open(fileobj=buf) as tar:
        return set(tar.getnames())


def test_build_context_honours_both_ignore_files(tmp_path: Path) -> None:
    (tmp_path / "keep.py").write_text("x")
    (tmp_path / "secret.env").write_text("x")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "big.bin").write_text("x")
    (tmp_path / "data" / "small.txt").write_text("x")
    (tmp_path / ".dockerignore").write_text("*.env\n")
    (tmp_path / ".torchxignore").write_text("data\n!data/small.txt\n")
    names = _names(build_context(str(tmp_path)))
    assert names == {
        "keep.py",
        "data/small.txt",
        ".dockerignore",
        ".torchxignore",
        TORCHX_DOCKERFILE,
    }


def test_own_dockerfile_is_kept_as_is(tmp_path: Path) -> None:
    (tmp_path / TORCHX_DOCKERFILE).write_text("FROM scratch\n")
    buf = build_context(str(tmp_path))
    with tarfile.open(fileobj=buf) as tar:
        member = tar.extractfile(TORCHX_DOCKERFILE)
        assert member is not None and member.read() == b"FROM scratch\n"


def test_missing_directory_is_one_clear_error(tmp_path: Path) -> None:
    role = Role("r", BUSYBOX, workspace=Workspace({str(tmp_path / "nope"): ""}))
    with pytest.raises(ValueError, match=r"workspace directory `.*nope` does not exist"):
        _Builder().build_workspaces([role], {})


def test_push_needs_image_repo() -> None:
    app = AppDef("a", roles=[Role("r", "sha256:" + "a" * 64)])
    with pytest.raises(KeyError, match="image_repo"):
        _Builder().dryrun_push_images(app, {})
    pushed = _Builder().dryrun_push_images(app, {"image_repo": "127.0.0.1:5123/x"})
    assert app.roles[0].image == "127.0.0.1:5123/x:" + "a" * 64
    assert pushed == {"sha256:" + "a" * 64: ("127.0.0.1:5123/x", "a" * 64)}


@pytest.fixture
def images() -> Iterator[list[str]]:
    """Image ids/tags built by a test, removed afterwards."""
    import docker

    made: list[str] = []
    yield made
    client = docker.from_env()
    try:
        for image in reversed(made):
            try:
                client.images.remove(image, force=True)
            except docker.errors.NotFound:
                pass
    finally:
        client.close()


def _project(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text(f"hello {uuid.uuid4().hex}\n")  # unique: no cross-test cache
    (ws / "skip.log").write_text("no")
    (ws / ".torchxignore").write_text("*.log\n")
    return ws


@pytest.mark.docker
def test_build_adds_files_on_top_of_role_image_and_runs(tmp_path: Path, images: list[str]) -> None:
    from torchx.schedulers.docker_scheduler import create_scheduler

    ws = _project(tmp_path)
    sched = create_scheduler("wstest", grace_period=1)
    role = Role("r", BUSYBOX, entrypoint="sh", args=["-c", "cat hello.txt; ls skip.log || true"])
    app = AppDef("ws", roles=[role])
    app_id = sched.submit(app, {"quiet": True}, workspace=str(ws))
    try:
        from torchx.specs.api import is_terminal

        while not is_terminal(sched.describe(app_id).state):
            sched.wait_for_change(app_id, 1)
        out = "".join(sched.log_iter(app_id, "r"))
    finally:
        sched.delete(app_id)
    images.append(app.roles[0].image)
    assert app.roles[0].image.startswith("sha256:")
    assert (ws / "hello.txt").read_text() in out
    assert "No such file" in out  # skip.log was ignored


@pytest.mark.docker
def test_failing_build_shows_the_log_tail(tmp_path: Path) -> None:
    from torchx.workspace.docker_images import ImageBuildError

    ws = tmp_path / "bad"
    ws.mkdir()
    (ws / TORCHX_DOCKERFILE).write_text(f"FROM {BUSYBOX}\nRUN echo about-to-fail && exit 7\n")
    role = Role("r", BUSYBOX, workspace=Workspace({str(ws): ""}))
    with pytest.raises(ImageBuildError) as info:
        _Builder().build_workspaces([role], {"quiet": True})
    msg = str(info.value)
    assert msg.startswith("image build failed:")
    assert "about-to-fail" in msg and "7" in msg and "\n" not in msg


@pytest.mark.docker
@pytest.mark.registry
def test_push_to_the_local_registry(tmp_path: Path, images: list[str]) -> None:
    import os
    import urllib.request

    registry = os.environ["TORCHX_FLOW_REGISTRY"]
    repo = f"{registry}/torchx-test-{uuid.uuid4().hex[:8]}"
    role = Role("r", BUSYBOX, workspace=Workspace({str(_project(tmp_path)): ""}))
    app = AppDef("push", roles=[role])
    builder = _Builder()
    builder.build_workspaces(app.roles, {"quiet": True})
    built = app.roles[0].image
    images.append(built)
    to_push = builder.dryrun_push_images(app, {"image_repo": repo})
    images.append(app.roles[0].image)
    builder.push_images(to_push)
    tag = built.removeprefix("sha256:")
    name = repo.split("/", 1)[1]
    with urllib.request.urlopen(f"http://{registry}/v2/{name}/tags/list", timeout=5) as resp:
        assert tag in resp.read().decode()


@pytest.mark.docker
def test_unreachable_registry_is_one_line(tmp_path: Path, images: list[str]) -> None:
    from torchx.workspace.docker_images import ImageBuildError

    role = Role("r", BUSYBOX, workspace=Workspace({str(_project(tmp_path)): ""}))
    app = AppDef("push", roles=[role])
    builder = _Builder()
    builder.build_workspaces(app.roles, {"quiet": True})
    images.append(app.roles[0].image)
    to_push = builder.dryrun_push_images(app, {"image_repo": "127.0.0.1:9/nowhere"})
    images.append(app.roles[0].image)
    with pytest.raises(ImageBuildError, match="failed to push docker image: ") as info:
        builder.push_images(to_push)
    assert "\n" not in str(info.value)


def test_buffer_is_a_valid_tar_even_when_empty(tmp_path: Path) -> None:
    buf = build_context(str(tmp_path))
    assert _names(buf) == {TORCHX_DOCKERFILE}
    assert isinstance(buf.read(0), bytes) or isinstance(buf, io.IOBase)
