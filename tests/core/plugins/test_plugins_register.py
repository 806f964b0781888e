"""register.named_resource (tags, aliases, fractionals, errors) and the fraction helpers."""

from __future__ import annotations

import sys
import textwrap
import types
from collections.abc import Iterator

import pytest

from torchx.plugins import (
    EIGHTH,
    HALF,
    QUARTER,
    SIXTEENTH,
    WHOLE,
    PluginType,
    halve_mem_down_to,
    powers_of_two_gpus,
)
from torchx.specs import Resource

NAME_TAG = "torchx/named_resources.name"
FRACTIONAL_TAG = "torchx/named_resources.is_fractional"


@pytest.fixture
def make_module() -> Iterator[types.FunctionType]:
    created: list[str] = []

    def make(src: str, name: str = "plg_reg_mod") -> types.ModuleType:
        module = types.ModuleType(name)
        sys.modules[name] = module
        created.append(name)
        exec(compile(textwrap.dedent(src), f"<{name}>", "exec"), module.__dict__)
        return module

    yield make  # type: ignore[misc]
    for name in created:
        sys.modules.pop(name, None)


HEADER = """
from torchx.plugins import register, powers_of_two_gpus, HALF, WHOLE
from torchx.specs import Resource
"""


def test_constants() -> None:
    assert (WHOLE, HALF, QUARTER, EIGHTH, SIXTEENTH) == (1.0, 0.5, 0.25, 0.125, 0.0625)


def test_base_factory_tags_and_module_dict(make_module) -> None:
    mod = make_module(
        HEADER
        + """
@register.named_resource()
def small():
    return Resource(cpu=1, gpu=0, memMB=100, tags={"keep": 1})

@register.named_resource(name="renamed")
def other():
    return Resource(cpu=2, gpu=0, memMB=200)
"""
    )
    assert list(mod.NAMED_RESOURCES) == ["small", "renamed"]
    res = mod.NAMED_RESOURCES["small"]()
    assert (res.cpu, res.memMB) == (1, 100)
    assert res.tags == {"keep": 1, NAME_TAG: "small", FRACTIONAL_TAG: False}
    assert res.get_resource_name() == "small" and not res.is_fractional()
    assert mod.small is mod.NAMED_RESOURCES["small"]  # the decorator returns the base factory
    assert mod.NAMED_RESOURCES["renamed"]().get_resource_name() == "renamed"
    assert mod.small._plugin_type is PluginType.NAMED_RESOURCE
    assert mod.small() is not mod.small()


def test_aliases_keep_base_tags(make_module) -> None:
    mod = make_module(
        HEADER
        + """
@register.named_resource(aliases=["tiny", "wee"])
def small():
    return Resource(cpu=1, gpu=0, memMB=100)
"""
    )
    assert list(mod.NAMED_RESOURCES) == ["small", "tiny", "wee"]
    for alias in ("tiny", "wee"):
        assert getattr(mod, alias) is mod.NAMED_RESOURCES[alias]
        assert getattr(mod, alias)().tags == {NAME_TAG: "small", FRACTIONAL_TAG: False}


def test_fractionals_dict(make_module) -> None:
    mod = make_module(
        HEADER
        + """
@register.named_resource(fractionals={WHOLE: "full", HALF: "half"})
def host(fractional: float = 1.0):
    return Resource(cpu=int(16 * fractional), gpu=int(8 * fractional), memMB=1000)
"""
    )
    assert list(mod.NAMED_RESOURCES) == ["host", "host_full", "host_half"]
    half = mod.NAMED_RESOURCES["host_half"]()
    assert (half.cpu, half.gpu) == (8, 4)
    assert half.tags == {NAME_TAG: "host_half", FRACTIONAL_TAG: True}
    assert mod.NAMED_RESOURCES["host_full"]().tags == {NAME_TAG: "host_full", FRACTIONAL_TAG: False}
    assert mod.NAMED_RESOURCES["host"]().tags == {NAME_TAG: "host", FRACTIONAL_TAG: False}


def test_fractionals_callable(make_module) -> None:
    mod = make_module(
        HEADER
        + """
@register.named_resource(fractionals=powers_of_two_gpus)
def gpu_host(fractional: float = 1.0):
    return Resource(cpu=int(96 * fractional), gpu=int(8 * fractional), memMB=int(1024 * fractional))
"""
    )
    assert list(mod.NAMED_RESOURCES) == [
        "gpu_host",
        "gpu_host_8",
        "gpu_host_4",
        "gpu_host_2",
        "gpu_host_1",
    ]
    one = mod.NAMED_RESOURCES["gpu_host_1"]()
    assert (one.cpu, one.gpu, one.is_fractional()) == (12, 1, True)


def test_duplicate_name_raises(make_module) -> None:
    src = (
        HEADER
        + """
@register.named_resource(name="x")
def a():
    return Resource(cpu=1, gpu=0, memMB=1)

@register.named_resource(name="x")
def b():
    return Resource(cpu=1, gpu=0, memMB=1)
"""
    )
    with pytest.raises(ValueError) as e:
        make_module(src, name="plg_dup_mod")
    assert str(e.value) == "duplicate named resource `x` in module `plg_dup_mod`"


def test_alias_clashing_with_module_attribute_raises(make_module) -> None:
    src = (
        HEADER
        + """
taken = 1

@register.named_resource(aliases=["taken"])
def a():
    return Resource(cpu=1, gpu=0, memMB=1)
"""
    )
    with pytest.raises(AttributeError, match="already has an attribute `taken`"):
        make_module(src)


def test_powers_of_two_gpus() -> None:
    assert powers_of_two_gpus(Resource(cpu=1, gpu=8, memMB=1)) == {
        1.0: "8",
        0.5: "4",
        0.25: "2",
        0.125: "1",
    }
    assert powers_of_two_gpus(Resource(cpu=1, gpu=1, memMB=1)) == {1.0: "1"}
    for gpus in (0, 6):  # as TorchX: only a positive power of two
        with pytest.raises(ValueError, match=f"got gpu={gpus}"):
            powers_of_two_gpus(Resource(cpu=1, gpu=gpus, memMB=1))


def test_halve_mem_down_to() -> None:
    # as TorchX: the suffix is the GiB count (names like t1_64, t1_32, t1_16)
    fractions = halve_mem_down_to(minGiB=16)
    assert fractions(Resource(cpu=1, gpu=0, memMB=64 * 1024)) == {
        1.0: "64",
        0.5: "32",
        0.25: "16",
    }
    assert fractions(Resource(cpu=1, gpu=0, memMB=8 * 1024)) == {}
    assert halve_mem_down_to(minGiB=3)(Resource(cpu=1, gpu=0, memMB=96 * 1024)) == {
        1.0: "96",
        0.5: "48",
        0.25: "24",
        0.125: "12",
        0.0625: "6",
        0.03125: "3",
    }
    with pytest.raises(ValueError, match="odd part"):
        halve_mem_down_to(minGiB=1)(Resource(cpu=1, gpu=0, memMB=96 * 1024))
    for mem in (0, 1536):
        with pytest.raises(ValueError, match="whole number of GiB"):
            fractions(Resource(cpu=1, gpu=0, memMB=mem))


def test_generated_names_are_module_attributes(make_module) -> None:
    mod = make_module(
        HEADER
        + """
@register.named_resource(name="custom", aliases=["alias"], fractionals={HALF: "half"})
def fn(fractional: float = 1.0):
    return Resource(cpu=int(16 * fractional), gpu=0, memMB=1000)
"""
    )
    # as TorchX: a custom name, aliases and fractions are importable from the module
    assert mod.custom is mod.NAMED_RESOURCES["custom"]
    assert mod.alias is mod.NAMED_RESOURCES["alias"]
    assert mod.custom_half().cpu == 8
    assert mod.alias._plugin_base_name == "custom" and mod.alias._plugin_is_alias
    assert mod.custom_half._plugin_base_name == "custom"
    assert not hasattr(mod.custom, "_plugin_base_name")


def test_fraction_clashing_with_module_attribute_raises(make_module) -> None:
    with pytest.raises(AttributeError, match="already has an attribute `host_half`"):
        make_module(
            HEADER
            + """
host_half = 1

@register.named_resource(fractionals={HALF: "half"})
def host(fractional: float = 1.0):
    return Resource(cpu=1, gpu=0, memMB=1)
"""
        )
