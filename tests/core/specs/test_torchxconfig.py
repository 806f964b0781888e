"""TorchXConfig: one .torchxconfig reader for files and text; TORCHXCONFIG=/dev/null."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from torchx.specs import runopts
from torchx.specs.torchxconfig import TorchXConfig, find_configs, merge_defaults

TEXT = """\
[cli:run]
scheduler = local_cwd

[local_cwd]
log_dir = /tmp/a%%b
prepend_cwd = True
nope = 1

[component:utils.echo]
msg = from-config

[torchx:tracker]
fsspec =

[tracker:fsspec]
config = /cfg.txt

[named_resources]
pct = {"cpu": 1, "memMB": 100, "capabilities": {"x": "50%"}}
"""


def test_dev_null_and_character_devices_switch_config_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TORCHXCONFIG", "/dev/null")
    assert find_configs() == ["/dev/null"]
    config = TorchXConfig.discover()
    assert not config and config.section("local_cwd") == {}


def test_dev_null_through_the_cli_and_runner(tmp_path: Path) -> None:
    code = (
        "from torchx.runner import get_runner\n"
        "from torchx.runner import config\n"
        "cfg = {}\n"
        "config.apply('local_cwd', cfg)\n"
        "with get_runner() as r:\n"
        "    info = r.dryrun_component('utils.echo', ['--msg', 'x'], 'local_cwd')\n"
        "print('ok', cfg, info.app.name)\n"
    )
    env = {"TORCHXCONFIG": "/dev/null", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "ok {} echo"


@pytest.mark.parametrize("what", ["missing", "dir"])
def test_unusable_torchxconfig_is_one_clear_error(
    what: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "missing" if what == "missing" else tmp_path
    monkeypatch.setenv("TORCHXCONFIG", str(path))
    with pytest.raises(FileNotFoundError, match="does not exist or is not a file"):
        find_configs()


def test_readers_and_percent_rule() -> None:
    config = TorchXConfig.from_text(TEXT)
    assert config.scheduler() == "local_cwd" and config.scheduler("other") == "other"
    assert config.section("local_cwd")["log_dir"] == "/tmp/a%b"  # TorchX: %% is a literal %
    assert config.component_defaults() == {"utils.echo": {"msg": "from-config"}}
    assert config.trackers() == {"fsspec": "/cfg.txt"}
    # the one exception: [named_resources] is read raw
    (entry,) = config.named_resources()
    assert entry == ("<text>", "pct", '{"cpu": 1, "memMB": 100, "capabilities": {"x": "50%"}}')


def test_bare_percent_outside_named_resources_names_file_and_fix() -> None:
    config = TorchXConfig.from_text("[local_cwd]\nlog_dir = /tmp/50%\n", "my.cfg")
    with pytest.raises(ValueError, match=r"my.cfg: \[local_cwd\] log_dir: .*write a literal"):
        config.section("local_cwd")


def test_apply_run_opts_casts_keeps_explicit_and_skips_unknown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    opts = runopts()
    opts.add("log_dir", type_=str, help="d")
    opts.add("prepend_cwd", type_=bool, help="p", default=False)
    cfg: dict[str, object] = {"log_dir": "explicit"}
    TorchXConfig.from_text(TEXT).apply_run_opts("local_cwd", cfg, opts)  # type: ignore[arg-type]
    assert cfg == {"log_dir": "explicit", "prepend_cwd": True}
    assert "`nope = 1` was declared in the [local_cwd] section" in caplog.text


def test_first_source_wins_and_defaults_merge() -> None:
    top = TorchXConfig.from_text("[component:utils.echo]\nmsg = top\n", "top")
    config = top.then(TorchXConfig.from_text(TEXT))
    assert config.sources == ["top", "<text>"]
    assert config.component_defaults()["utils.echo"] == {"msg": "top"}
    assert config.scheduler() == "local_cwd"
    merged = merge_defaults({"c": {"a": "1"}}, {"c": {"a": "2", "b": "3"}}, None)
    assert merged == {"c": {"a": "1", "b": "3"}}


def test_files_are_read_in_order(tmp_path: Path) -> None:
    first, second = tmp_path / "1.cfg", tmp_path / "2.cfg"
    first.write_text("[local_cwd]\nlog_dir = one\n")
    second.write_text("[local_cwd]\nlog_dir = two\nprepend_cwd = True\n")
    config = TorchXConfig.from_files([str(first), str(second)])
    assert config.section("local_cwd") == {"log_dir": "one", "prepend_cwd": "True"}
