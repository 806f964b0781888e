"""Tests for the utils.* components; argv is run for real where it can be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import torchx
from torchx import specs
from torchx.components import _hydra, utils
from torchx.specs.builders import materialize_appdef


def _run(app: specs.AppDef, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    values = specs.macros.Values(
        img_root=str(tmp_path), app_id="app-1", replica_id="0", rank0_env="TORCHX_RANK0_HOST"
    )
    role = values.apply(app.roles[0])
    env = {
        **os.environ,
        **role.env,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    return subprocess.run(
        [role.entrypoint, *role.args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )


def test_echo(tmp_path: Path) -> None:
    app = utils.echo(msg="hi $(id) `id` 'q'", num_replicas=2)
    assert app.name == "echo" and app.roles[0].name == "echo"
    assert app.roles[0].num_replicas == 2
    assert app.roles[0].image == torchx.IMAGE
    assert app.roles[0].resource == specs.Resource(cpu=1, gpu=0, memMB=1024)
    assert _run(app, tmp_path).stdout == "hi $(id) `id` 'q'\n"


def test_echo_default_through_builder(tmp_path: Path) -> None:
    assert _run(materialize_appdef(utils.echo, []), tmp_path).stdout == "hello world\n"


def test_touch(tmp_path: Path) -> None:
    app = utils.touch("made; touch pwned")
    assert (app.name, app.roles[0].entrypoint) == ("touch", "touch")
    _run(app, tmp_path)
    assert (tmp_path / "made; touch pwned").exists()
    assert not (tmp_path / "pwned").exists()


def test_sh_runs_quoted_args(tmp_path: Path) -> None:
    args = ["printf", "%s|", "a b", "$(touch pwned)", "`touch pwned2`", "it's", "${app_id}"]
    app = utils.sh(*args)
    assert app.roles[0].entrypoint == "sh" and app.roles[0].args[0] == "-c"
    # ${app_id} is a macro, so it is substituted; everything else arrives literally.
    assert _run(app, tmp_path).stdout == "a b|$(touch pwned)|`touch pwned2`|it's|app-1|"
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()


def test_sh_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LOGLEVEL", "DEBUG")
    env = {"A": "1"}
    app = utils.sh(
        "echo",
        "$0",
        env=env,
        h="cpu.small",
        num_replicas=3,
        max_retries=2,
        mounts=["type=bind", "src=/a", "dst=/b"],
        entrypoint="bash",
    )
    role = app.roles[0]
    assert env == {"A": "1"}  # not mutated
    assert role.env == {"A": "1", "LOGLEVEL": "DEBUG"}
    assert role.resource == specs.resource(h="cpu.small")
    assert (role.num_replicas, role.max_retries) == (3, 2)
    assert role.mounts == specs.parse_mounts(["type=bind", "src=/a", "dst=/b"])
    assert role.entrypoint == "bash" and role.args == ["-c", "echo '$0'"]
    assert _run(app, tmp_path).stdout == "$0\n"


def test_sh_default_loglevel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOGLEVEL", raising=False)
    role = utils.sh("true", cpu=3, memMB=10).roles[0]
    assert role.env == {"LOGLEVEL": "WARNING"}
    assert role.resource == specs.resource(cpu=3, memMB=10)


def test_python_script_module_and_command(tmp_path: Path) -> None:
    (tmp_path / "show.py").write_text("import sys, json\nprint(json.dumps(sys.argv[1:]))\n")
    args = ["--a", "b c", "$(id)"]
    app = utils.python(*args, script="show.py", name="job", num_replicas=2)
    assert app.name == "job" and app.roles[0].name == "python"
    assert app.roles[0].num_replicas == 2 and app.roles[0].env == {}
    assert json.loads(_run(app, tmp_path).stdout) == args
    app = utils.python(*args, m="show")
    assert app.roles[0].env == {"HYDRA_MAIN_MODULE": "show"}
    assert app.roles[0].args[:2] == ["-m", "show"]
    assert json.loads(_run(app, tmp_path).stdout) == args
    app = utils.python(c="print('from -c')")
    assert _run(app, tmp_path).stdout == "from -c\n"


def test_python_needs_exactly_one_program() -> None:
    for kwargs in ({}, {"m": "a", "c": "b"}, {"script": "a.py", "m": "b"}):
        with pytest.raises(ValueError) as e:
            utils.python(**kwargs)  # type: ignore[arg-type]
        assert str(e.value) == "exactly one of `-m`, `-c` and `--script` needs to be specified"


def test_binary(tmp_path: Path) -> None:
    app = materialize_appdef(utils.binary, ["--entrypoint", "echo", "--num_replicas", "2", "x y"])
    role = app.roles[0]
    assert app.name == "torchx_utils_binary" and role.name == "binary"
    assert role.image == "<NONE>" and role.num_replicas == 2
    assert _run(app, tmp_path).stdout == "x y\n"


def test_copy_and_booth_appdefs() -> None:
    app = utils.copy("memory://a", "file:///tmp/b")
    assert app.name == "torchx-utils-copy" and app.roles[0].name == "torchx-utils-copy"
    assert [app.roles[0].entrypoint, *app.roles[0].args] == [
        "python", "-m", "torchx.apps.utils.copy_main", "--src", "memory://a",
        "--dst", "file:///tmp/b",
    ]  # fmt: skip
    app = materialize_appdef(utils.booth, ["--x1", "1", "--x2", "3.5"])
    assert app.name == "torchx-utils-booth"
    assert app.roles[0].args == [
        "-m", "torchx.apps.utils.booth_main", "--x1", "1.0", "--x2", "3.5",
        "--trial_idx", "0", "--tracker_base", "/tmp/torchx-util-booth",
    ]  # fmt: skip


def test_booth_runs_for_real(tmp_path: Path) -> None:
    base = tmp_path / "tracker"
    _run(utils.booth(1.0, 3.0, trial_idx=4, tracker_base=str(base)), tmp_path)
    assert json.loads((base / "4.json").read_text()) == {"booth_eval": 0.0}


def test_hydra_parser_has_short_options() -> None:
    from torchx.specs.builders import _create_args_parser

    strings = {s for a in _create_args_parser(utils.hydra)._actions for s in a.option_strings}
    assert {"--config_name", "-cn", "--config_dir", "-cd"} <= strings


def test_hydra_resolvers_emit_escaped_macros() -> None:
    assert _hydra.RESOLVERS == {
        "torchx.app_id": "\\${app_id}",
        "torchx.replica_id": "\\${replica_id}",
        "torchx.rank0_env": "\\${rank0_env}",
        "torchx.img_root": "\\${img_root}",
    }


def test_hydra_without_hydra_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a None entry in sys.modules makes `import hydra` raise ImportError, as when it is absent
    for name in ("hydra", "omegaconf"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match="pip install hydra-core"):
        utils.hydra(config_name="app", config_dir=str(tmp_path))


def test_hydra_composes_appdef(tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text(
        "app:\n"
        "  _target_: torchx.specs.AppDef\n"
        "  name: hydra-app\n"
        "  roles:\n"
        "    - _target_: torchx.specs.Role\n"
        "      name: r\n"
        "      image: img\n"
        "      args: ['${torchx.app_id:}']\n"
    )
    app = utils.hydra("app.name=over", config_name="app", config_dir=str(tmp_path))
    assert app.name == "over"
    assert app.roles[0].args == ["${app_id}"]
