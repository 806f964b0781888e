"""``env_allow`` on ``local_docker``: a container gets only the allowed launcher variables."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from torchx.specs.api import AppDef, AppState, Resource, Role, is_terminal

BUSYBOX = "torchx-flow/busybox:latest"
SECRET = "s3cr3t-docker-env-allow-51d0"


@pytest.fixture
def runner() -> Iterator[Any]:
    from torchx.runner import get_runner

    with get_runner() as r:
        yield r


def _container_env(app_id: str) -> dict[str, str]:
    import docker

    client = docker.from_env()
    try:
        (container,) = client.containers.list(
            all=True, filters={"label": f"torchx.pytorch.org/app-id={app_id}"}
        )
        entries = container.attrs["Config"]["Env"] or []
    finally:
        client.close()
    return dict(e.split("=", 1) for e in entries)


@pytest.mark.docker
@pytest.mark.parametrize("cfg", ["", "env_allow=", "env_allow=FAKE_KEEP*"])
def test_containers_get_only_allowed_launcher_variables(
    cfg: str, runner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_API_TOKEN", SECRET)
    monkeypatch.setenv("FAKE_KEEP_ME", "kept")
    role = Role(
        "w",
        BUSYBOX,
        entrypoint="sh",
        args=["-c", "env | grep FAKE_ | sort; true"],
        env={"ROLE_VAR": "from-role"},
        resource=Resource(cpu=1, gpu=0, memMB=64),
    )
    parsed = runner.cfg_from_str("local_docker", cfg)
    info = runner.dryrun(AppDef("envallow", roles=[role]), "local_docker", cfg=parsed)
    assert SECRET not in str(info)
    handle = runner.schedule(info)
    try:
        status = runner.wait(handle, wait_interval=60)
        assert status is not None and is_terminal(status.state)
        assert status.state == AppState.SUCCEEDED
        app_id = handle.rpartition("/")[2]
        env = _container_env(app_id)
        lines = [line.strip() for line in runner.log_lines(handle, "w", 0)]
    finally:
        runner.delete(handle)
    assert "FAKE_API_TOKEN" not in env and not any(SECRET in v for v in env.values())
    assert env["ROLE_VAR"] == "from-role"
    kept = "FAKE_KEEP" in cfg
    assert ("FAKE_KEEP_ME" in env) == kept
    assert lines == (["FAKE_KEEP_ME=kept"] if kept else [])
