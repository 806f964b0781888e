"""get_configured_trackers: [torchx:tracker] names, [tracker:NAME] configs, env overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchx.runner.api import get_configured_trackers


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / ".torchxconfig"
    monkeypatch.setenv("TORCHXCONFIG", str(path))
    return path


def test_no_config_no_trackers() -> None:
    assert get_configured_trackers() == {}


def test_names_from_config_and_configs_from_sections(config_file: Path) -> None:
    config_file.write_text(
        "[torchx:tracker]\nfsspec =\nmine =\n\n[tracker:fsspec]\nconfig = /tmp/fsspec.conf\n"
    )
    assert get_configured_trackers() == {"fsspec": "/tmp/fsspec.conf", "mine": None}


def test_env_overrides_names_and_configs(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_file.write_text("[torchx:tracker]\nfsspec =\n[tracker:other]\nconfig = from-file\n")
    monkeypatch.setenv("TORCHX_TRACKERS", "other,third")
    monkeypatch.setenv("TORCHX_TRACKER_THIRD_CONFIG", "from-env")
    assert get_configured_trackers() == {"other": "from-file", "third": "from-env"}


def test_values_are_ignored_with_a_warning(
    config_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config_file.write_text("[torchx:tracker]\nmytracker = my.module:create\n")
    assert get_configured_trackers() == {"mytracker": None}
    assert "ignoring the value of `mytracker = my.module:create`" in caplog.text
