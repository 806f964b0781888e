"""Names TorchX's own modules expose (some private) that code and tests written against TorchX
import: each resolves to our equivalent and behaves like it."""

import importlib
import json
import os
from pathlib import Path

import pytest

from torchx.settings import ENV_TORCHX_TRACKERS


def test_builders_re_exports_the_mount_types() -> None:
    builders = importlib.import_module("torchx.specs.builders")
    api = importlib.import_module("torchx.specs.api")
    for name in ("BindMount", "DeviceMount", "VolumeMount"):
        assert getattr(builders, name) is getattr(api, name)


def test_overlays_format_key_and_file_loader(tmp_path: Path) -> None:
    from torchx.specs import overlays

    assert overlays._FORMAT_KEY == overlays.OVERLAYS_MARKER == "__torchx_overlays__"
    path = tmp_path / "o.json"
    path.write_text(json.dumps({"spec": {"x": 1}}))
    assert overlays._load_overlay_file(str(path)) == {"spec": {"x": 1}}
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="must contain a mapping"):
        overlays._load_overlay_file(str(path))


def test_tracker_env_extraction(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx.tracker.api import _extract_tracker_name_and_config_from_environ as extract

    monkeypatch.delenv(ENV_TORCHX_TRACKERS, raising=False)
    assert extract() == {}
    monkeypatch.setenv(ENV_TORCHX_TRACKERS, "a, b")
    monkeypatch.setenv("TORCHX_TRACKER_B_CONFIG", "cfg.txt")
    assert extract() == {"a": None, "b": "cfg.txt"}


def test_cmd_log_colours_and_dist_debug_flags() -> None:
    from torchx.cli import cmd_log
    from torchx.components import dist
    from torchx.util import colors

    assert (cmd_log.GREEN, cmd_log.ENDC) == (colors.GREEN, colors.ENDC)
    assert dist._TORCH_DEBUG_FLAGS["TORCH_DISTRIBUTED_DEBUG"] == "DETAIL"
    role = dist.ddp(script="t.py", debug=True).roles[0]
    for key, value in dist._TORCH_DEBUG_FLAGS.items():
        assert role.env[key] == value


def test_plugins_registration_module_and_plugin_source(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx import plugins
    from torchx.plugins import _registration, _registry

    assert _registration.register is plugins.register
    assert _registration.resource_tags is plugins.resource_tags
    assert _registration.halve_mem_down_to is plugins.halve_mem_down_to
    assert _registry.NAMED_RESOURCES_ATTR == "NAMED_RESOURCES"
    src = _registry.PluginSource
    assert int(src.NAMESPACE_PKG | src.ENTRYPOINT) == 3 and int(src.NONE) == 0
    monkeypatch.setitem(os.environ, "TORCHX_PLUGINS_SOURCE", "3")
    reg = _registry.PluginRegistry(plugin_sources=src.NONE)
    assert reg.get(plugins.PluginType.SCHEDULER) == {}
