"""Pure AppDef -> container request translation of local_docker (no engine needed)."""

from __future__ import annotations

import pytest

from torchx.schedulers._docker._request import (
    LABEL_APP_ID,
    LABEL_REPLICA_ID,
    LABEL_ROLE_NAME,
    LABEL_SESSION,
    container_name,
    copy_env,
    to_docker_job,
)
from torchx.schedulers._docker._state import app_state, container_state
from torchx.specs.api import (
    AppDef,
    AppState,
    BindMount,
    DeviceMount,
    Resource,
    Role,
    VolumeMount,
    macros,
)


def _app() -> AppDef:
    trainer = Role(
        "trainer",
        "img:1",
        entrypoint="python",
        args=["-m", "train", f"--host-env={macros.rank0_env}", f"--rank={macros.replica_id}"],
        env={"A": "role", "ID": macros.app_id},
        num_replicas=2,
        resource=Resource(cpu=2, gpu=1, memMB=1024, devices={"vpc.amazonaws.com/efa": 1}),
        port_map={"c10d": 29500},
        mounts=[
            BindMount("/data", "/mnt/data", read_only=True),
            VolumeMount("vol", "/mnt/vol"),
            DeviceMount("/dev/fuse", "/dev/fuse", "rw"),
        ],
        max_retries=2,
    )
    reader = Role("reader", "img:2", entrypoint="cat", resource=Resource(cpu=-1, gpu=0, memMB=-1))
    return AppDef("my app", roles=[trainer, reader])


def test_one_container_per_replica_with_names_labels_and_network() -> None:
    job = to_docker_job(_app(), "app-123", "sess")
    assert [c.kwargs["name"] for c in job.containers] == [
        "app-123-trainer-0",
        "app-123-trainer-1",
        "app-123-reader-0",
    ]
    assert job.network == "torchx-app-123"
    first = job.containers[0].kwargs
    assert first["hostname"] == first["name"] and first["network"] == "torchx-app-123"
    assert first["labels"][LABEL_APP_ID] == "app-123"
    assert first["labels"][LABEL_SESSION] == "sess"
    assert job.containers[1].kwargs["labels"][LABEL_REPLICA_ID] == "1"
    assert job.containers[2].kwargs["labels"][LABEL_ROLE_NAME] == "reader"


def test_macros_env_and_rank0_host() -> None:
    job = to_docker_job(
        _app(), "app-123", "s", env={"A": "cfg", "B": "cfg"}, copied_env={"B": "host", "C": "h"}
    )
    c = job.containers[1]
    assert c.command == [
        "python",
        "-m",
        "train",
        "--host-env=TORCHX_RANK0_HOST",
        "--rank=1",
    ]
    env = c.kwargs["environment"]
    assert env == {
        "B": "cfg",
        "C": "h",
        "A": "role",
        "ID": "app-123",
        "TORCHX_RANK0_HOST": "app-123-trainer-0",
        "TORCHX_IMAGE": "img:1",
    }


def test_resources_retries_mounts_devices_ports() -> None:
    trainer, reader = (c.kwargs for c in to_docker_job(_app(), "a", "s").containers[1:])
    assert trainer["nano_cpus"] == 2_000_000_000
    assert trainer["mem_limit"] == trainer["shm_size"] == "1024m"
    assert trainer["device_requests"] == [{"count": 1, "capabilities": [["compute", "utility"]]}]
    assert trainer["restart_policy"] == {"Name": "on-failure", "MaximumRetryCount": 2}
    assert trainer["mounts"] == [
        {"Type": "bind", "Source": "/data", "Target": "/mnt/data", "ReadOnly": True},
        {"Type": "volume", "Source": "vol", "Target": "/mnt/vol", "ReadOnly": False},
    ]
    assert trainer["devices"] == [
        "/dev/fuse:/dev/fuse:rw",
        "/dev/infiniband/uverbs0:/dev/infiniband/uverbs0:rwm",
    ]
    assert trainer["ports"] == {"29500/tcp": ("127.0.0.1", None)}
    for key in ("nano_cpus", "mem_limit", "device_requests", "restart_policy", "ports"):
        assert key not in reader


def test_str_hides_copied_env_values() -> None:
    job = to_docker_job(_app(), "a", "s", copied_env={"SECRET_TOKEN": "s3cr3t"})
    text = str(job)
    assert "s3cr3t" not in text and "SECRET_TOKEN: <copied>" in text
    assert "app_id: a" in text


def test_container_name_is_trimmed_and_cleaned() -> None:
    name = container_name("-" * 5 + "x" * 40, "role/with space" * 3, 7)
    assert name[0].isalnum() and name.endswith("-7")
    assert " " not in name and "/" not in name


def test_copy_env_globs() -> None:
    env = {"FOO_A": "1", "FOO_B": "2", "BAR": "3"}
    assert copy_env(["FOO_*"], env) == {"FOO_A": "1", "FOO_B": "2"}
    assert copy_env(None, env) == {}


@pytest.mark.parametrize(
    ("status", "code", "state"),
    [
        ("created", 0, AppState.SUBMITTED),
        ("restarting", 1, AppState.PENDING),
        ("running", 0, AppState.RUNNING),
        ("exited", 0, AppState.SUCCEEDED),
        ("exited", 137, AppState.FAILED),
        ("dead", 0, AppState.FAILED),
        ("weird", 0, AppState.UNKNOWN),
    ],
)
def test_container_state(status: str, code: int, state: AppState) -> None:
    assert container_state(status, code) == state


def test_app_state_is_fail_fast_and_cancel_sticky() -> None:
    S, R, F, P, C = (
        AppState.SUCCEEDED,
        AppState.RUNNING,
        AppState.FAILED,
        AppState.PENDING,
        AppState.SUBMITTED,
    )
    assert app_state([S, S]) == S
    assert app_state([R, F]) == F
    assert app_state([S, R]) == R
    assert app_state([P, C]) == C
    assert app_state([F, S], cancelled=True) == AppState.CANCELLED
    assert app_state([]) == AppState.UNKNOWN


def test_dryrun_yaml_renders_sdk_mount_and_device_request_types() -> None:
    import yaml
    from docker.types import DeviceRequest, Mount

    from torchx.schedulers.docker_scheduler import DockerContainer, DockerJob

    job = DockerJob(
        app_id="a",
        containers=[
            DockerContainer(
                image="img",
                command=["echo"],
                kwargs={
                    "mounts": [Mount(target="/t", source="/s", read_only=True, type="bind")],
                    "device_requests": [DeviceRequest(count=4, capabilities=[["compute"]])],
                },
            )
        ],
    )
    kwargs = yaml.safe_load(str(job))["containers"][0]["kwargs"]
    assert kwargs["mounts"][0]["Target"] == "/t" and kwargs["mounts"][0]["ReadOnly"] is True
    assert kwargs["device_requests"][0]["Count"] == 4
    assert kwargs["device_requests"][0]["Capabilities"] == [["compute"]]
