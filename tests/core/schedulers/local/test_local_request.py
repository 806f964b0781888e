from __future__ import annotations

import os
from pathlib import Path

import pytest

from torchx.schedulers import local_scheduler as ls
from torchx.schedulers.local_scheduler import (
    ENV_CUDA_VISIBLE_DEVICES,
    CWDImageProvider,
    LocalDirectoryImageProvider,
    LocalScheduler,
    PopenRequest,
    _join_PATH,
    create_scheduler,
)
from torchx.specs.api import AppDef, Resource, Role, macros


def _request(sched: LocalScheduler, app: AppDef, **cfg: object) -> PopenRequest:
    info = sched.submit_dryrun(app, cfg)  # type: ignore[arg-type]
    assert isinstance(info.request, PopenRequest)
    return info.request


def test_create_scheduler_accepts_torchx_kwargs(tmp_path: Path) -> None:
    sched = create_scheduler(
        "s", home="/x", trackers="a", state_dir=str(tmp_path), grace_period="2"
    )
    assert sched.backend == "local" and sched.session_name == "s"
    assert sched._cache_size == 100 and sched._extra_paths == []
    assert sched._image_provider_class is CWDImageProvider
    assert sched._grace_period == 2.0 and Path(sched._state_root_dir()) == tmp_path
    with pytest.raises(ValueError, match="cache size must be greater than zero"):
        create_scheduler("s", cache_size=0)


def test_runopts() -> None:
    opts = create_scheduler("s").run_opts()
    names = [name for name, _ in opts]
    assert names[:3] == ["log_dir", "prepend_cwd", "auto_set_cuda_visible_devices"]
    assert "detach" in names and "grace_period" in names


def test_dryrun_macros_env_and_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARENT_ONLY", "p")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    sched = create_scheduler("sess", extra_paths=["/extra"])
    role = Role(
        "trainer",
        "img",
        entrypoint="python",
        args=["--id", macros.replica_id, "--app", macros.app_id, "--root", macros.img_root],
        env={"HOST_VAR": macros.rank0_env, "PATH": "/role/bin"},
        num_replicas=2,
        max_retries=3,
    )
    req = _request(sched, AppDef("myapp", roles=[role]))
    assert req.app_id.startswith("myapp-")
    cwd = os.getcwd()
    params = req.role_params["trainer"]
    assert [p.args for p in params] == [
        ["python", "--id", str(i), "--app", req.app_id, "--root", cwd] for i in range(2)
    ]
    env = params[1].env
    assert env["HOST_VAR"] == "TORCHX_RANK0_HOST" and env["TORCHX_RANK0_HOST"] == "localhost"
    # the inherited environment is applied at spawn, never recorded: PATH is a prefix
    assert "PARENT_ONLY" not in env and env["PYTHONUNBUFFERED"] == "x"
    assert env["PATH"] == f"/extra:/role/bin:{cwd}"
    app_dir = Path(sched._state_root_dir()) / "sess" / req.app_id
    assert req.log_dir == str(app_dir) == req.app_dir
    replica_dir = app_dir / "trainer" / "1"
    assert env["TORCHELASTIC_ERROR_FILE"] == str(replica_dir / "error.json")
    assert env["PET_LOG_DIR"] == str(app_dir / "torchelastic" / "trainer")
    assert params[1].combined == str(replica_dir / "combined.log") and params[1].cwd == cwd
    assert req.role_log_dirs["trainer"] == [str(app_dir / "trainer" / "0"), str(replica_dir)]
    assert req.max_retries == {"trainer": 3} and req.retry_policies == {"trainer": "APPLICATION"}
    assert ENV_CUDA_VISIBLE_DEVICES not in env or env[ENV_CUDA_VISIBLE_DEVICES] == os.environ.get(
        ENV_CUDA_VISIBLE_DEVICES
    )
    assert "role_params" in repr(sched.submit_dryrun(AppDef("a", roles=[role]), {}))
    assert not app_dir.exists(), "a dry run must not create the app dir"


def test_prepend_cwd_log_dir_and_role_overrides(tmp_path: Path) -> None:
    sched = create_scheduler("sess")
    role = Role(
        "r", "img", entrypoint="echo", env={"TORCHELASTIC_ERROR_FILE": "/e", "PET_LOG_DIR": "/p"}
    )
    req = _request(sched, AppDef("a", roles=[role]), prepend_cwd=True, log_dir=str(tmp_path))
    env = req.role_params["r"][0].env
    assert env["PATH"] == os.getcwd()  # a prefix: the inherited PATH follows at spawn
    assert env["TORCHELASTIC_ERROR_FILE"] == "/e" and env["PET_LOG_DIR"] == "/p"
    assert req.log_dir == str(tmp_path / "sess" / req.app_id)
    assert req.role_params["r"][0].stdout == str(tmp_path / "sess" / req.app_id / "r/0/stdout.log")


def test_join_path() -> None:
    assert _join_PATH("a", None, "", ":b:", "c") == "a:b:c"
    assert _join_PATH() == ""


def test_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    sched = create_scheduler("s")
    monkeypatch.setattr(sched, "_cuda_device_count", lambda: 4)
    app = AppDef(
        "a",
        roles=[
            Role("a", "i", entrypoint="e", num_replicas=2, resource=Resource(1, 1, 1)),
            Role("b", "i", entrypoint="e", num_replicas=1, resource=Resource(1, 2, 1)),
        ],
    )
    req = _request(sched, app, auto_set_cuda_visible_devices=True)
    got = [p.env.get(ENV_CUDA_VISIBLE_DEVICES) for ps in req.role_params.values() for p in ps]
    assert got == ["0", "1", "2,3"]
    monkeypatch.setattr(sched, "_cuda_device_count", lambda: 3)
    monkeypatch.delenv(ENV_CUDA_VISIBLE_DEVICES, raising=False)
    req = _request(sched, app, auto_set_cuda_visible_devices=True)
    assert all(ENV_CUDA_VISIBLE_DEVICES not in p.env for ps in req.role_params.values() for p in ps)


def test_cuda_device_count_without_nvidia_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert create_scheduler("s")._cuda_device_count() == 0


def test_image_providers(tmp_path: Path) -> None:
    role = Role("r", str(tmp_path), entrypoint="run.sh")
    provider = LocalDirectoryImageProvider({})
    assert provider.fetch(str(tmp_path)) == str(tmp_path)
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    assert provider.get_entrypoint(str(tmp_path), role) == str(tmp_path / "run.sh")
    # not in the image directory: as given, found on PATH (e.g. `python`)
    assert provider.get_entrypoint(str(tmp_path), Role("r", "i", entrypoint="python")) == "python"
    with pytest.raises(ValueError, match="Invalid image name: /nope, does not exist"):
        provider.fetch("/nope")
    assert CWDImageProvider({}).fetch("anything") == os.getcwd()
    sched = create_scheduler("s", image_provider_class=LocalDirectoryImageProvider)
    req = _request(sched, AppDef("a", roles=[role]))
    assert req.role_params["r"][0].cwd == str(tmp_path)


def test_module_names_for_compat() -> None:
    for name in ("make_unique", "_LocalAppDef", "Opts", "ReplicaParam", "SignalException"):
        assert hasattr(ls, name)
    exc = ls.SignalException("Process 1 got signal: 15", ls.signal.SIGTERM)
    assert exc.sigval == ls.signal.SIGTERM and str(exc) == "Process 1 got signal: 15"


def test_image_providers_give_replica_params(tmp_path: Path) -> None:
    from torchx.schedulers.local_scheduler import CWDImageProvider, LocalDirectoryImageProvider

    role = Role(name="r", image=str(tmp_path), entrypoint="a", args=["b", "c"], env={"K": "v"})
    local = LocalDirectoryImageProvider(cfg={})
    param = local.get_replica_param(local.fetch(role.image), role, combined="/x/combined.log")
    assert (param.args, param.env, param.cwd) == (["a", "b", "c"], {"K": "v"}, str(tmp_path))
    assert (param.stdout, param.stderr, param.combined) == (None, None, "/x/combined.log")
    cwd = CWDImageProvider(cfg={})
    assert cwd.get_replica_param(cwd.fetch("ignored"), role).cwd == os.getcwd()
