import copy
import dataclasses
from pathlib import Path

import pytest

from torchx.specs import api
from torchx.specs.api import (
    MISSING,
    NULL_RESOURCE,
    TORCHX_HOME,
    AppDef,
    AppDryRunInfo,
    BindMount,
    CapabilityKey,
    DeviceMount,
    InvalidRunConfigException,
    MalformedAppHandleException,
    MountType,
    Resource,
    RetryPolicy,
    Role,
    TorchXError,
    UnknownAppException,
    UnknownSchedulerException,
    VolumeMount,
    cases,
    get_type_name,
    macros,
    make_app_handle,
    parse_app_handle,
    parse_mounts,
)


def test_constants() -> None:
    assert (api.MISSING, api.NONE, api.UNKNOWN, api.ALL, api.NA) == (
        "<MISSING>",
        "<NONE>",
        "<UNKNOWN>",
        "all",
        "<<NA>>",
    )
    assert api.TORCHX_CONTEXT_NAME == "TORCHX_CONTEXT_NAME"
    assert NULL_RESOURCE == Resource(cpu=-1, gpu=-1, memMB=-1)
    assert api.app_metadata.CONTEXT == "torchx/context"
    assert api.app_metadata.ROLES_PREFIX == "torchx/roles."


def test_torchx_home_creates_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "home"))
    path = TORCHX_HOME("a", "b")
    assert path == tmp_path / "home" / "a" / "b"
    assert path.is_dir()


def test_torchx_home_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHX_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert TORCHX_HOME() == tmp_path / ".torchx"


def test_resource_copy_merges_capabilities_and_copies_tags() -> None:
    orig = Resource(1, 2, 3, capabilities={"a": 1}, devices={"d": 1}, tags={"t": "x"})
    res = Resource.copy(orig, b=2, a=3)
    assert res == Resource(
        1, 2, 3, capabilities={"a": 3, "b": 2}, devices={"d": 1}, tags={"t": "x"}
    )
    res.tags["t"] = "y"
    res.devices["d"] = 5
    assert orig.tags == {"t": "x"} and orig.devices == {"d": 1}


def test_resource_tags() -> None:
    res = Resource(1, 0, 1)
    assert not res.is_fractional() and res.get_resource_name() is None
    res.tags.update({"torchx/named_resources.is_fractional": True})
    res.tags["torchx/named_resources.name"] = "gpu_half"
    assert res.is_fractional() and res.get_resource_name() == "gpu_half"
    assert res != Resource(1, 0, 1)


def test_capability_key() -> None:
    key = CapabilityKey("k8s", "itype", str)
    res = Resource(1, 0, 1)
    assert key.key == "k8s.itype"
    assert key.get(res) is None and key.get(res, "dflt") == "dflt"
    key.set(res, "p4d")
    assert res.capabilities == {"k8s.itype": "p4d"}
    assert key.get(res) == "p4d"
    with pytest.raises(dataclasses.FrozenInstanceError):
        key.name = "x"  # type: ignore[misc]


def test_capability_key_type_mismatch() -> None:
    key = CapabilityKey("ns", "count", int)
    res = Resource(1, 0, 1, capabilities={"ns.count": True})
    with pytest.raises(
        TypeError, match=r"^capability `ns.count` expected `int`, got `bool`: True$"
    ):
        key.get(res)
    res.capabilities["ns.count"] = 3
    assert key.get(res) == 3


def test_role_positional_order_and_defaults() -> None:
    role = Role("trainer", "img", 2, "python", ["-m", "x"])
    assert (role.min_replicas, role.entrypoint, role.args) == (2, "python", ["-m", "x"])
    names = [f.name for f in dataclasses.fields(Role)]
    assert names == [
        "name", "image", "min_replicas", "entrypoint", "args", "env", "num_replicas",
        "max_retries", "retry_policy", "resource", "port_map", "metadata", "mounts",
        "workspace", "overrides",
    ]  # fmt: skip
    default = Role("a", "b")
    assert default.entrypoint == MISSING
    assert default.num_replicas == 1 and default.max_retries == 0
    assert default.retry_policy == RetryPolicy.APPLICATION
    assert default.workspace is None


def test_role_resource_default_is_a_fresh_null_resource() -> None:
    role = Role("a", "b")
    assert role.resource == NULL_RESOURCE
    assert role.resource is not NULL_RESOURCE
    role.resource.cpu = 4
    assert NULL_RESOURCE.cpu == -1
    assert Role("c", "d").resource.cpu == -1


def test_role_pre_proc_returns_input() -> None:
    info = AppDryRunInfo({"req": 1}, str)
    assert Role("a", "b").pre_proc("local_cwd", info) is info


def test_appdef_defaults() -> None:
    app = AppDef("app")
    assert app.roles == [] and app.metadata == {}
    assert AppDef("x").roles is not app.roles


def test_enums() -> None:
    assert [p.value for p in RetryPolicy] == ["REPLICA", "APPLICATION", "ROLE"]
    assert RetryPolicy("ROLE") is RetryPolicy.ROLE
    assert MountType.BIND == "bind" and MountType("device") is MountType.DEVICE


def test_macros_substitute() -> None:
    values = macros.Values(img_root="/root", app_id="app-1", replica_id="0", rank0_env="R0")
    assert values.substitute("${img_root}/x ${app_id} $unknown $$") == "/root/x app-1 $unknown $"
    assert values.substitute("$${${rank0_env}}") == "${R0}"
    assert values.to_dict() == {
        "img_root": "/root",
        "app_id": "app-1",
        "replica_id": "0",
        "rank0_env": "R0",
    }
    assert macros.app_id == "${app_id}" and macros.rank0_env == "${rank0_env}"
    assert [f.name for f in dataclasses.fields(macros.Values)] == [
        "img_root",
        "app_id",
        "replica_id",
        "rank0_env",
    ]


def test_macros_apply() -> None:
    role = Role(
        "r",
        image="${img_root}/img",
        entrypoint="${img_root}/bin",
        args=["--id", macros.app_id, macros.replica_id],
        env={"${app_id}": macros.app_id},
        port_map={"p": 1},
        metadata={"a": [macros.app_id, {"b": macros.replica_id}], "n": 1},
        mounts=[BindMount("${app_id}", "/dst")],
    )
    values = macros.Values(img_root="/root", app_id="app-1", replica_id="3", rank0_env="R0")
    new = values.apply(role)
    assert new.args == ["--id", "app-1", "3"]
    assert new.env == {"${app_id}": "app-1"}
    assert new.metadata == {"a": ["app-1", {"b": "3"}], "n": 1}
    assert new.image == "${img_root}/img" and new.entrypoint == "${img_root}/bin"
    assert new.mounts == [BindMount("${app_id}", "/dst")]
    assert role.args == ["--id", "${app_id}", "${replica_id}"]
    assert new.resource is not role.resource


def test_macros_apply_shares_non_empty_overrides() -> None:
    overrides = {"image": "x"}
    role = Role("r", "img", overrides=overrides)
    values = macros.Values("", "a", "0", "R")
    assert values.apply(role).overrides is overrides
    empty = Role("r", "img")
    assert values.apply(empty).overrides is not empty.overrides


def test_app_handles() -> None:
    handle = make_app_handle("local_cwd", "torchx", "echo-123")
    assert handle == "local_cwd://torchx/echo-123"
    parsed = parse_app_handle(handle)
    assert parsed == ("local_cwd", "torchx", "echo-123")
    assert parsed.scheduler_backend == "local_cwd" and parsed.app_id == "echo-123"
    assert parse_app_handle("k8s:///foo") == ("k8s", "", "foo")
    assert parse_app_handle("k8s://a/b/c") == ("k8s", "a/b", "c")


@pytest.mark.parametrize("handle", ["foo", "local://session", "://s/a", "local://s/"])
def test_malformed_app_handle(handle: str) -> None:
    with pytest.raises(MalformedAppHandleException) as exc:
        parse_app_handle(handle)
    expected = f"{handle} is not of the form: <scheduler_backend>://<session_name>/<app_id>"
    assert str(exc.value) == expected


def test_exceptions() -> None:
    err = InvalidRunConfigException("bad value", "key", {})
    assert str(err) == "bad value. Given: <EMPTY>" and err.cfg_key == "key"
    assert str(InvalidRunConfigException("bad", "k", {"k": 1})) == "bad. Given: {'k': 1}"
    assert str(UnknownSchedulerException("foo")) == (
        "Scheduler backend: foo does not exist."
        " Use session.scheduler_backends() to see all supported schedulers"
    )
    assert str(UnknownAppException("h")).startswith("Unknown app = h. Did you forget")
    for exc_type in (
        InvalidRunConfigException,
        MalformedAppHandleException,
        UnknownSchedulerException,
        UnknownAppException,
        api.AppStatusError,
    ):
        assert issubclass(exc_type, TorchXError)


def test_app_dry_run_info() -> None:
    info: AppDryRunInfo[dict[str, int]] = AppDryRunInfo({"a": 1}, lambda r: f"REQ {r['a']}")
    assert repr(info) == "REQ 1" and str(info) == "REQ 1"
    assert info.app is None and dict(info.cfg) == {}
    app = AppDef("x")
    info._app = app
    info._cfg = {"k": "v"}
    assert info.app is app and info.cfg["k"] == "v"
    with pytest.raises(TypeError):
        info.cfg["k"] = "w"  # type: ignore[index]


def test_get_type_name() -> None:
    from typing import List  # noqa: UP035

    assert get_type_name(str) == "str"
    assert get_type_name(list[str]) == "list"
    assert get_type_name(List[str]) == "typing.List[str]"  # noqa: UP006


@pytest.mark.parametrize(
    ("snake", "camel"), [("log_dir", "logDir"), ("a", "a"), ("image_repo_url", "imageRepoUrl")]
)
def test_cases(snake: str, camel: str) -> None:
    assert cases.snake_to_camel(snake) == camel
    assert cases.camel_to_snake(camel) == snake


def test_parse_mounts() -> None:
    mounts = parse_mounts(
        [
            "type=bind", "src=~/data", "dst=/data", "readonly",
            "type=volume", "source=vol", "target=/vol",
            "type=device", "src=/dev/fuse",
            "type=device", "src=/dev/x", "destination=/dev/y", "perm=rw",
        ]
    )  # fmt: skip
    assert mounts == [
        BindMount(str(Path("~/data").expanduser()), "/data", read_only=True),
        VolumeMount("vol", "/vol", read_only=False),
        DeviceMount("/dev/fuse", "/dev/fuse", "rwm"),
        DeviceMount("/dev/x", "/dev/y", "rw"),
    ]
    assert parse_mounts([]) == []


def test_parse_mounts_errors() -> None:
    with pytest.raises(KeyError, match="type must be specified first"):
        parse_mounts(["src=/a", "type=bind"])
    with pytest.raises(KeyError, match="unknown mount option foo, must be one of"):
        parse_mounts(["type=bind", "foo=bar"])
    with pytest.raises(ValueError, match="^x is not a valid permission flags must one of r,w,m$"):
        parse_mounts(["type=device", "src=/dev/a", "perm=rx"])
    with pytest.raises(ValueError, match=r"invalid mount type 'tmpfs', must be one of"):
        parse_mounts(["type=tmpfs", "dst=/tmp"])


def test_role_deepcopy_shares_overrides_and_copies_the_rest() -> None:
    overrides = {"entrypoint": "x"}
    app = AppDef("a", roles=[Role("r", "img", args=["a"], overrides=overrides)])
    app_copy = copy.deepcopy(app)
    assert app_copy == app
    assert app_copy.roles[0].overrides is overrides
    assert app_copy.roles[0].args is not app.roles[0].args


def test_torchx_home_default_is_path_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # as TorchX: the default follows pathlib.Path.home() (code patches it in tests)
    monkeypatch.delenv("TORCHX_HOME", raising=False)
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path / "sally"))
    assert TORCHX_HOME() == tmp_path / "sally" / ".torchx"
    assert (tmp_path / "sally" / ".torchx").is_dir()
