"""Tests for dist.ddp and dist.spmd, including real bash/torchrun runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchx import specs
from torchx.components.dist import ddp, spmd


def _materialize(role: specs.Role, tmp_path: Path, app_id: str = "t") -> specs.Role:
    values = specs.macros.Values(
        img_root=str(tmp_path), app_id=app_id, replica_id="0", rank0_env="TORCHX_RANK0_HOST"
    )
    return values.apply(role)


@pytest.fixture
def fake_torchrun(tmp_path: Path) -> Path:
    """A directory holding a `torchrun` that prints its argv as JSON."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    script = bin_dir / "torchrun"
    script.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    script.chmod(0o755)
    return bin_dir


def _run_argv(role: specs.Role, tmp_path: Path, bin_dir: Path, **env: str) -> list[str]:
    full_env = {**role.env, "PATH": f"{bin_dir}:{os.environ['PATH']}", **env}
    proc = subprocess.run(
        [role.entrypoint, *role.args],
        env=full_env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(proc.stdout)


NASTY_ARGS = [
    "a b",
    "$(touch pwned_subst)",
    "`touch pwned_backtick`",
    "it's",
    'say "hi"',
    "line1\nline2",
    "${HOME}",
    "; touch pwned_semi",
    "",
]


def test_ddp_single_node_is_shell_safe(tmp_path: Path, fake_torchrun: Path) -> None:
    script = f"x.py; touch {tmp_path / 'pwned_script'}"
    app = ddp(*NASTY_ARGS, script=script, j="1x2", rdzv_conf="a=1 b")
    role = _materialize(app.roles[0], tmp_path)
    assert role.entrypoint == "bash" and role.args[0] == "-c"
    argv = _run_argv(role, tmp_path, fake_torchrun)
    assert argv == [
        "--standalone",
        "--rdzv_conf",
        "a=1 b",
        "--nnodes",
        "1",
        "--nproc_per_node",
        "2",
        "--tee",
        "3",
        "--role",
        "",
        script,
        *NASTY_ARGS,
    ]
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("pwned")]


def test_ddp_multi_node_endpoint_expands_rank0_host(tmp_path: Path, fake_torchrun: Path) -> None:
    app = ddp("--lr", "0.1", m="pkg.train", j="1:2x4", rdzv_port=1234)
    role = _materialize(app.roles[0], tmp_path)
    expected_tail = ["--nnodes", "1:2", "--nproc_per_node", "4", "--tee", "3", "--role", ""]
    expected_tail += ["-m", "pkg.train", "--lr", "0.1"]
    head = ["--rdzv_backend", "c10d", "--rdzv_endpoint"]
    argv = _run_argv(role, tmp_path, fake_torchrun, TORCHX_RANK0_HOST="node0")
    assert argv == [*head, "node0:1234", "--rdzv_id", "t", *expected_tail]
    argv = _run_argv(role, tmp_path, fake_torchrun)
    assert argv == [*head, "localhost:1234", "--rdzv_id", "t", *expected_tail]


def test_ddp_app_id_never_reaches_the_shell(tmp_path: Path, fake_torchrun: Path) -> None:
    app_id = "it's-$(touch pwned)-`touch pwned2`"
    role = _materialize(ddp(script="x.py", j="2x1").roles[0], tmp_path, app_id=app_id)
    argv = _run_argv(role, tmp_path, fake_torchrun)
    assert argv[argv.index("--rdzv_id") + 1] == app_id
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("pwned")]


def test_ddp_static_backend_adds_node_rank(tmp_path: Path, fake_torchrun: Path) -> None:
    app = ddp(script="train.py", j="2x1", rdzv_backend="static")
    argv = _run_argv(_materialize(app.roles[0], tmp_path), tmp_path, fake_torchrun)
    assert argv[argv.index("--node_rank") + 1] == "0"
    assert argv[:2] == ["--rdzv_backend", "static"]


def test_ddp_single_node_other_backend_uses_port(tmp_path: Path, fake_torchrun: Path) -> None:
    app = ddp(script="train.py", j="2", rdzv_backend="etcd", rdzv_port=4321)
    argv = _run_argv(_materialize(app.roles[0], tmp_path), tmp_path, fake_torchrun)
    assert argv[:4] == ["--rdzv_backend", "etcd", "--rdzv_endpoint", "localhost:4321"]


def test_ddp_unsubstituted_command() -> None:
    cmd = ddp(script="train.py", j="2x3").roles[0].args[1]
    assert cmd == (
        "torchrun --rdzv_backend c10d --rdzv_endpoint $${${rank0_env}:=localhost}:29500"
        " --rdzv_id \"$TORCHX_RDZV_ID\" --nnodes 2 --nproc_per_node 3 --tee 3 --role '' train.py"
    )
    assert ddp(script="train.py").roles[0].env["TORCHX_RDZV_ID"] == "${app_id}"


def test_ddp_rejects_non_int_port_and_tee() -> None:
    with pytest.raises(ValueError, match="rdzv_port"):
        ddp(script="x.py", j="2x1", rdzv_port="1; touch x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tee"):
        ddp(script="x.py", tee="3; id")  # type: ignore[arg-type]


def test_ddp_appdef_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOGLEVEL", raising=False)
    app = ddp(
        script="path/to/train.py",
        name="exp/",
        j="1:3x2",
        h="gpu.small",
        metadata={"k": "v"},
        max_retries=2,
        mounts=["type=bind", "src=/a", "dst=/b"],
    )
    assert app.name == "train" and app.metadata == {"k": "v"}
    (role,) = app.roles
    assert role.name == "train"
    assert (role.min_replicas, role.num_replicas) == (1, 3)
    assert role.port_map == {"c10d": 29500}
    assert role.resource == specs.resource(h="gpu.small")
    assert role.max_retries == 2
    assert role.mounts == specs.parse_mounts(["type=bind", "src=/a", "dst=/b"])
    assert role.env == {
        "TORCHX_TRACKING_EXPERIMENT_NAME": "exp",
        "TORCHX_TRACKING_RUN_NAME": "train",
        "LOGLEVEL": "WARNING",
        "TORCHX_RDZV_ID": "${app_id}",
    }


def test_ddp_names_env_and_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOGLEVEL", "INFO")
    app = ddp(m="a.b.trainer", name="myrun", debug=True)
    assert app.name == "myrun" and app.roles[0].name == "trainer"
    env = app.roles[0].env
    assert env["TORCHX_TRACKING_EXPERIMENT_NAME"] == "default-experiment"
    assert env["LOGLEVEL"] == "INFO"
    assert env["TORCH_DISTRIBUTED_DEBUG"] == "DETAIL" and env["CUDA_LAUNCH_BLOCKING"] == "1"
    assert env["NCCL_DESYNC_DEBUG"] == "1" and env["TORCH_SHOW_CPP_STACKTRACES"] == "1"


def test_ddp_does_not_mutate_inputs() -> None:
    env = {"A": "1"}
    metadata = {"m": "1"}
    app = ddp(script="x.py", env=env, metadata=metadata)
    assert env == {"A": "1"} and metadata == {"m": "1"}
    app.roles[0].env["B"] = "2"
    app.metadata["n"] = "2"
    assert env == {"A": "1"} and metadata == {"m": "1"}


@pytest.mark.parametrize("j", ["", "x", "1x", "1:2", "a:1x2", "1x2x3", "-1"])
def test_ddp_bad_j(j: str) -> None:
    with pytest.raises(ValueError) as e:
        ddp(script="x.py", j=j)
    assert str(e.value) == f"Invalid format for -j, usage example: 1:2x4 or 1x4 or 4. Given: {j}"


def test_ddp_needs_exactly_one_of_script_and_m() -> None:
    for kwargs in ({}, {"script": "a.py", "m": "a"}):
        with pytest.raises(ValueError, match="^exactly one of --script and -m must be specified$"):
            ddp(**kwargs)  # type: ignore[arg-type]


def test_spmd_infers_nproc_from_named_resource(tmp_path: Path, fake_torchrun: Path) -> None:
    app = spmd("--x", script="train.py", j="2", h="gpu.medium")
    argv = _run_argv(_materialize(app.roles[0], tmp_path), tmp_path, fake_torchrun)
    assert argv[argv.index("--nnodes") + 1] == "2"
    assert argv[argv.index("--nproc_per_node") + 1] == "2"
    assert app.roles[0].resource == specs.resource(h="gpu.medium")


TRAIN = """
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
print(f"rank={dist.get_rank()} world={dist.get_world_size()} sum={int(t.item())}", flush=True)
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_ddp_real_torchrun(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch is not installed")
    (tmp_path / "train.py").write_text(textwrap.dedent(TRAIN))
    app = ddp(script="train.py", j="1x2")
    role = _materialize(app.roles[0], tmp_path)
    env = {
        **os.environ,
        **role.env,
        "TORCHX_RANK0_HOST": "localhost",
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    proc = subprocess.run(
        [role.entrypoint, *role.args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rank=0 world=2 sum=3" in proc.stdout
    assert "rank=1 world=2 sum=3" in proc.stdout
