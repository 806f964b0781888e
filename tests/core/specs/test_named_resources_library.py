"""The named-resource library: lazy loading, merge order, sources, lookups and resource()."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support import write_dist, write_file

from torchx.plugins import registry
from torchx.specs import (
    NULL_RESOURCE,
    Resource,
    _NamedResourcesLibrary,
    get_named_resources,
    named_resources,
    resource,
)
from torchx.specs import _named_resources as nr_module

PREFIXES = ("torchx_plugins", "my_module", "my_resources", "nr_custom")


def purge() -> None:
    for name in [m for m in sys.modules if m.split(".")[0] in PREFIXES]:
        del sys.modules[name]


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delenv("TORCHX_CUSTOM_NAMED_RESOURCES", raising=False)
    monkeypatch.delenv("TORCHX_PLUGINS_SOURCE", raising=False)
    purge()
    registry.cache_clear()
    named_resources.reset()
    yield root
    purge()
    registry.cache_clear()
    named_resources.reset()


def test_import_discovers_nothing() -> None:
    code = (
        "import sys, torchx.specs as s\n"
        "assert s.named_resources._factories is None\n"
        "bad = [m for m in ('torchx.plugins', 'torchx.runner.config', 'yaml') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "s.resource(h='gpu.small')\n"
        "assert s.named_resources._factories is not None\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lazy_load_and_reset(site: Path) -> None:
    lib = _NamedResourcesLibrary()
    assert lib._factories is None
    assert "gpu.small" in lib
    assert lib._factories is not None
    lib.reset()
    assert lib._factories is None
    assert len(lib) > 70
    assert lib._factories is not None


def test_default_contents_and_mapping_api(site: Path) -> None:
    names = list(named_resources)
    assert names[:2] == ["gpu.small", "gpu.medium"]
    assert "aws_p5.48xlarge" in names
    assert names[-2:] == ["NULL", "MISSING"]
    assert list(named_resources.keys()) == names
    assert len(named_resources) == len(names) == 10 + 61 + 2
    items = dict(named_resources.items())
    assert items["cpu.nano"] == Resource(cpu=1, gpu=0, memMB=512)
    assert named_resources["NULL"] == NULL_RESOURCE
    assert named_resources["MISSING"] == NULL_RESOURCE
    assert named_resources["NULL"] is not NULL_RESOURCE  # a fresh copy, the sentinel stays safe


def test_every_lookup_is_fresh(site: Path) -> None:
    a = named_resources["aws_p4d.24xlarge"]
    a.capabilities.clear()
    assert named_resources["aws_p4d.24xlarge"].capabilities != {}


def test_lookup_is_case_insensitive_exact_wins(site: Path) -> None:
    assert named_resources["GPU.Small"] == named_resources["gpu.small"]
    assert "AWS_P4D.24XLARGE" in named_resources
    assert resource(h="CPU.NANO").memMB == 512
    named_resources._factories = {
        "Big": lambda: Resource(cpu=1, gpu=0, memMB=1),
        "big": lambda: Resource(cpu=2, gpu=0, memMB=1),
    }
    assert named_resources["Big"].cpu == 1
    assert named_resources["big"].cpu == 2
    with pytest.raises(KeyError) as e:
        named_resources["BIG"]
    assert "`Big`" in str(e.value) and "`big`" in str(e.value) and "ambiguous" in str(e.value)
    assert "BIG" not in named_resources


def test_unknown_key_messages(site: Path) -> None:
    with pytest.raises(KeyError) as e:
        named_resources["gpu.smal"]
    assert e.value.args[0] == "No named resource found for `gpu.smal`. Did you mean `gpu.small`?"
    with pytest.raises(KeyError) as e:
        named_resources["AWS_P4D.24XLARG"]
    assert e.value.args[0].endswith("Did you mean `aws_p4d.24xlarge`?")
    named_resources._factories = {"alpha": lambda: NULL_RESOURCE}
    with pytest.raises(KeyError) as e:
        named_resources["zzzzzz"]
    assert e.value.args[0] == (
        "No named resource found for `zzzzzz`. Registered named resources: ['alpha']"
    )
    assert 3 not in named_resources


def test_resource_function() -> None:
    assert resource() == Resource(cpu=2, gpu=0, memMB=1024)
    assert resource(cpu=0, gpu=0, memMB=0) == Resource(cpu=2, gpu=0, memMB=1024)  # quirk 1
    assert resource(cpu=4, gpu=1, memMB=10) == Resource(cpu=4, gpu=1, memMB=10)
    assert resource(cpu=99, h="gpu.small") == Resource(cpu=8, gpu=1, memMB=32768)
    assert resource(cpu=3, h="") == Resource(cpu=3, gpu=0, memMB=1024)


def test_get_named_resources_is_deprecated() -> None:
    with pytest.warns(FutureWarning) as rec:
        res = get_named_resources("gpu.small")
    assert str(rec[0].message) == (
        "`get_named_resources()` is deprecated, use `resource(h=name)` instead"
    )
    assert res.gpu == 1


def test_seed_doc_entry_point_example(site: Path) -> None:
    write_file(site, "my_module/__init__.py", "")
    write_file(
        site,
        "my_module/resources.py",
        """
        from torchx.specs import Resource

        def gpu_x2() -> Resource:
            return Resource(cpu=16, gpu=2, memMB=65536)
        """,
    )
    write_dist(
        site, "my_module_dist", {"torchx.named_resources": {"gpu_x2": "my_module.resources:gpu_x2"}}
    )
    assert resource(h="gpu_x2").gpu == 2


def test_seed_doc_custom_module_example(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_file(
        site,
        "my_resources.py",
        """
        from torchx.specs import Resource

        def my_gpu() -> Resource:
            return Resource(cpu=32, gpu=4, memMB=131072)

        NAMED_RESOURCES = {"my_gpu": my_gpu, "gpu.small": my_gpu, "fixed": Resource(cpu=1, gpu=0, memMB=5)}
        """,
    )
    monkeypatch.setenv("TORCHX_CUSTOM_NAMED_RESOURCES", "my_resources")
    assert resource(h="my_gpu").gpu == 4
    assert resource(h="gpu.small").gpu == 4  # overrides the generic table
    fixed = resource(h="fixed")
    fixed.cpu = 100
    assert resource(h="fixed").cpu == 1


def test_custom_module_missing_explicit_warns(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHX_CUSTOM_NAMED_RESOURCES", "nr_custom_does_not_exist")
    with pytest.warns(
        UserWarning, match="TORCHX_CUSTOM_NAMED_RESOURCES='nr_custom_does_not_exist'"
    ):
        assert "gpu.small" in named_resources


def test_custom_module_default_missing_is_silent(site: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "gpu.small" in named_resources


def test_custom_module_missing_dependency(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_file(site, "nr_custom_dep.py", "import nr_custom_not_installed\nNAMED_RESOURCES = {}\n")
    # not set explicitly (the default module path): treated as absent
    monkeypatch.setattr(nr_module, "DEFAULT_CUSTOM_NAMED_RESOURCES", "nr_custom_dep")
    assert "gpu.small" in named_resources
    named_resources.reset()
    monkeypatch.setenv("TORCHX_CUSTOM_NAMED_RESOURCES", "nr_custom_dep")
    with pytest.raises(ModuleNotFoundError, match="nr_custom_not_installed"):
        named_resources["gpu.small"]


def test_custom_module_without_named_resources(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_file(site, "nr_custom_empty.py", "X = 1\n")
    monkeypatch.setenv("TORCHX_CUSTOM_NAMED_RESOURCES", "nr_custom_empty")
    with pytest.raises(AttributeError, match="NAMED_RESOURCES"):
        named_resources["gpu.small"]


def test_merge_order(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_file(
        site,
        "nr_custom_order.py",
        """
        from torchx.specs import Resource
        NAMED_RESOURCES = {
            "cpu.nano": lambda: Resource(cpu=3, gpu=0, memMB=1),
            "shared": lambda: Resource(cpu=3, gpu=0, memMB=1),
            "NULL": lambda: Resource(cpu=3, gpu=0, memMB=1),
        }
        """,
    )
    write_file(
        site,
        "torchx_plugins/named_resources/p.py",
        """
        from torchx.plugins import register
        from torchx.specs import Resource

        @register.named_resource(name="shared")
        def shared():
            return Resource(cpu=4, gpu=0, memMB=1)

        @register.named_resource(name="aws_t3.medium")
        def t3():
            return Resource(cpu=4, gpu=0, memMB=1)
        """,
    )
    monkeypatch.setenv("TORCHX_CUSTOM_NAMED_RESOURCES", "nr_custom_order")
    assert named_resources["cpu.nano"].cpu == 3  # custom over generic
    assert named_resources["shared"].cpu == 4  # plugin over custom
    assert named_resources["shared"].get_resource_name() == "shared"
    assert named_resources["aws_t3.medium"].cpu == 4  # plugin over aws
    assert named_resources["NULL"] == NULL_RESOURCE  # NULL always last
    names = list(named_resources)
    assert names.index("aws_t3.medium") < names.index("shared")  # keys keep first position


def test_reentrant_lookup_raises(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_file(
        site,
        "nr_custom_reentrant.py",
        """
        from torchx.specs import named_resources
        BASE = named_resources["gpu.small"]
        NAMED_RESOURCES = {}
        """,
    )
    monkeypatch.setenv("TORCHX_CUSTOM_NAMED_RESOURCES", "nr_custom_reentrant")
    with pytest.raises(RuntimeError) as e:
        named_resources["gpu.small"]
    assert str(e.value).startswith(
        "re-entrant named-resource lookup: discovery is already in progress on this thread."
    )
    assert named_resources._factories is None
    monkeypatch.delenv("TORCHX_CUSTOM_NAMED_RESOURCES")
    assert named_resources["gpu.small"].gpu == 1  # recovers once the source is fixed


def test_single_flight_across_threads(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = nr_module._discover

    def slow_discover():  # type: ignore[no-untyped-def]
        calls.append(1)
        time.sleep(0.05)
        return real()

    monkeypatch.setattr(nr_module, "_discover", slow_discover)
    lib = _NamedResourcesLibrary()
    barrier = threading.Barrier(6)
    results: list[Resource] = []

    def lookup() -> None:
        barrier.wait()
        results.append(lib["gpu.large"])

    threads = [threading.Thread(target=lookup) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [1]
    assert len(results) == 6 and all(r.gpu == 4 for r in results)
