""".torchxconfig discovery and section readers (find_configs, load_sections, get_config(s))."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from torchx.runner import config


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A fake $HOME dir and cwd dir, patched into DEFAULT_CONFIG_DIRS; TORCHXCONFIG unset."""
    home = tmp_path / "home"
    cwd = tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.delenv("TORCHXCONFIG", raising=False)
    monkeypatch.setattr(config, "DEFAULT_CONFIG_DIRS", [str(home), str(cwd)])
    return home, cwd


def _write(d: Path, text: str) -> Path:
    path = d / ".torchxconfig"
    path.write_text(text)
    return path


def test_constants() -> None:
    assert config.CONFIG_FILE == ".torchxconfig"
    assert config.CONFIG_PREFIX_DELIM == ":"


def test_default_dirs_are_home_then_cwd_at_import_time(tmp_path: Path) -> None:
    code = "from torchx.runner import config; print(config.DEFAULT_CONFIG_DIRS)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"HOME": str(tmp_path / "h"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == str([str(tmp_path / "h"), str(tmp_path)])


def test_find_configs_home_first(dirs: tuple[Path, Path]) -> None:
    home, cwd = dirs
    assert config.find_configs() == []
    cwd_file = _write(cwd, "")
    assert config.find_configs() == [str(cwd_file)]
    home_file = _write(home, "")
    assert config.find_configs() == [str(home_file), str(cwd_file)]
    assert config.find_configs(dirs=[str(cwd)]) == [str(cwd_file)]


def test_torchxconfig_env_var(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    home, cwd = dirs
    _write(home, "")
    other = cwd / "custom.ini"
    other.write_text("")
    monkeypatch.setenv("TORCHXCONFIG", str(other))
    assert config.find_configs() == [str(other)]
    monkeypatch.setenv("TORCHXCONFIG", "")
    assert config.find_configs() == []
    missing = cwd / "missing.ini"
    monkeypatch.setenv("TORCHXCONFIG", str(missing))
    with pytest.raises(FileNotFoundError) as info:
        config.find_configs()
    assert str(info.value) == f"`TORCHXCONFIG={missing}` does not exist or is not a file."


def test_sections_first_value_wins_and_keys_are_case_sensitive(dirs: tuple[Path, Path]) -> None:
    home, cwd = dirs
    _write(
        home,
        "[component:dist.ddp]\nj = 2x8\n\n[cli:run]\nscheduler = local_cwd\n"
        "[tracker:fsspec]\nconfig = /home.cfg\n",
    )
    _write(
        cwd,
        "[component:dist.ddp]\nj = 1x1\nMaxRetries = 3\n\n[component:utils.echo]\nmsg = hi\n"
        "[component:]\nx = 1\n[:nope]\ny = 2\n[cli:run]\ncomponent = utils.echo\n",
    )
    assert config.load_sections("component") == {
        "dist.ddp": {"j": "2x8", "MaxRetries": "3"},
        "utils.echo": {"msg": "hi"},
    }
    assert config.get_configs("cli", "run") == {"scheduler": "local_cwd", "component": "utils.echo"}
    assert config.get_configs("cli", "list") == {}
    assert config.get_config("component", "dist.ddp", "MaxRetries") == "3"
    assert config.get_config("component", "dist.ddp", "maxretries") is None
    assert config.get_config("tracker", "fsspec", "config") == "/home.cfg"
    assert config.get_config("tracker", "missing", "config") is None


def test_import_is_cheap() -> None:
    code = (
        "import sys, torchx.runner.config\n"
        "heavy = [m for m in sys.modules if m in ('torchx.runner.api', 'yaml', 'docstring_parser')"
        " or m.endswith('_scheduler')]\n"
        "print(heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
