"""Named resources declared in the [named_resources] section of .torchxconfig files."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchx.plugins import registry
from torchx.specs import Resource, named_resources, resource
from torchx.specs import torchxconfig as config

EFA = "vpc.amazonaws.com/efa"


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("TORCHX_CUSTOM_NAMED_RESOURCES", raising=False)
    registry.cache_clear()
    named_resources.reset()
    yield
    registry.cache_clear()
    named_resources.reset()


def use_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> Path:
    path = tmp_path / "cfg" / ".torchxconfig"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body))
    monkeypatch.setenv("TORCHXCONFIG", str(path))
    return path


def test_json_and_key_value_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_config(
        tmp_path,
        monkeypatch,
        """
        [named_resources]
        MyTrainer = {"cpu": 4, "gpu": 1, "memMB": 8192, "devices": {"vpc.amazonaws.com/efa": 1},
            "capabilities": {"node.kubernetes.io/instance-type": "p4d.24xlarge"}}
        small_box = cpu=2,gpu=0,memMB=4096
        no_gpu = cpu=1, memmb=512
        """,
    )
    assert resource(h="MyTrainer") == Resource(
        cpu=4,
        gpu=1,
        memMB=8192,
        devices={EFA: 1},
        capabilities={"node.kubernetes.io/instance-type": "p4d.24xlarge"},
    )
    assert "MyTrainer" in list(named_resources)  # the key keeps its spelling
    assert resource(h="mytrainer").cpu == 4  # lookups are case-insensitive
    assert resource(h="small_box") == Resource(cpu=2, gpu=0, memMB=4096)
    assert resource(h="no_gpu") == Resource(cpu=1, gpu=0, memMB=512)
    first = resource(h="MyTrainer")
    first.devices.clear()
    assert resource(h="MyTrainer").devices == {EFA: 1}


def test_config_overrides_builtins_and_plugins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    (site / "torchx_plugins" / "named_resources").mkdir(parents=True)
    (site / "torchx_plugins" / "named_resources" / "p.py").write_text(
        "from torchx.plugins import register\n"
        "from torchx.specs import Resource\n"
        "@register.named_resource(name='plug')\n"
        "def plug():\n    return Resource(cpu=5, gpu=0, memMB=1)\n"
    )
    monkeypatch.syspath_prepend(str(site))
    use_config(
        tmp_path,
        monkeypatch,
        """
        [named_resources]
        gpu.small = cpu=1,gpu=0,memMB=1
        plug = cpu=6,gpu=0,memMB=1
        NULL = cpu=7,gpu=0,memMB=1
        """,
    )
    try:
        assert resource(h="gpu.small").cpu == 1
        assert resource(h="plug").cpu == 6
        assert resource(h="NULL").cpu == -1  # NULL and MISSING come last
    finally:
        for name in [m for m in sys.modules if m.startswith("torchx_plugins")]:
            del sys.modules[name]


def test_first_file_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    for d, cpu in ((home, 1), (cwd, 2)):
        d.mkdir()
        (d / ".torchxconfig").write_text(
            f"[named_resources]\nshared = cpu={cpu},memMB=1\nonly_{d.name} = cpu={cpu},memMB=1\n"
        )
    monkeypatch.delenv("TORCHXCONFIG")
    monkeypatch.setattr(config, "DEFAULT_CONFIG_DIRS", [str(home), str(cwd)])
    assert resource(h="shared").cpu == 1
    assert resource(h="only_home").cpu == 1
    assert resource(h="only_cwd").cpu == 2


def test_no_section_is_fine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_config(tmp_path, monkeypatch, "[local_cwd]\nlog_dir = /tmp\n")
    assert resource(h="gpu.small").gpu == 1


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ('{"cpu": 4, "memMB": }', "Expecting value"),
        ("[1, 2]", "is not key=value"),
        ("cpu=4,gpu=0", "`memMB` is required"),
        ("gpu=1,memMB=10", "`cpu` is required"),
        ("cpu=four,memMB=10", "`cpu` must be a non-negative integer, got 'four'"),
        ("cpu=-1,memMB=10", "`cpu` must be a non-negative integer"),
        ('{"cpu": true, "memMB": 10}', "`cpu` must be a non-negative integer, got True"),
        ("cpu=1,memMB=10,mem=3", "unknown field `mem` (did you mean `memMB`?)"),
        ('{"cpu": 1, "memMB": 1, "devices": [1]}', "`devices` must be a JSON object"),
        ('{"cpu": 1, "memMB": 1, "devices": {"x": "y"}}', "`devices.x` must be a non-negative"),
        ("cpu", "`cpu` is not key=value"),
    ],
)
def test_malformed_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, why: str
) -> None:
    path = use_config(tmp_path, monkeypatch, f"[named_resources]\nbroken = {value}\n")
    with pytest.raises(ValueError) as e:
        named_resources["gpu.small"]
    msg = str(e.value)
    assert msg.startswith(
        f"invalid named resource `broken` in the [named_resources] section of {path}: "
    )
    assert why in msg
    assert 'write it as JSON such as {"cpu": 4' in msg
    assert "or key=value pairs such as cpu=4,gpu=0,memMB=8192" in msg


def test_default_section_does_not_leak(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_config(
        tmp_path,
        monkeypatch,
        "[DEFAULT]\nleak = cpu=1,memMB=1\n[named_resources]\nmine = cpu=2,memMB=2\n",
    )
    assert "mine" in named_resources
    assert "leak" not in named_resources
