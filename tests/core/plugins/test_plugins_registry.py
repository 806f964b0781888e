"""PluginRegistry against real namespace packages and real *.dist-info entry points."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from _support import write_dist, write_file

from torchx.plugins import PluginRegistry, PluginType, RegistrationError, registry

PREFIXES = ("torchx_plugins", "plg_ep_mod")


def purge() -> None:
    for name in [m for m in sys.modules if m.split(".")[0] in PREFIXES]:
        del sys.modules[name]


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delenv("TORCHX_PLUGINS_SOURCE", raising=False)
    purge()
    registry.cache_clear()
    yield root
    purge()
    registry.cache_clear()


SCHED = """
from torchx.plugins import register

@register.scheduler()
def {name}(session_name, **kwargs):
    return ("{name}", session_name)
"""


def test_namespace_plugins_are_collected_recursively(site: Path) -> None:
    write_file(site, "torchx_plugins/schedulers/a.py", SCHED.format(name="alpha"))
    write_file(site, "torchx_plugins/schedulers/sub/__init__.py", "")
    write_file(site, "torchx_plugins/schedulers/sub/b.py", SCHED.format(name="beta"))
    # implicit namespace sub-directory (no __init__.py)
    write_file(site, "torchx_plugins/schedulers/ns/deep/c.py", SCHED.format(name="gamma"))
    write_file(site, "torchx_plugins/schedulers/_private.py", SCHED.format(name="hidden"))
    write_file(site, "torchx_plugins/schedulers/_priv/d.py", SCHED.format(name="hidden2"))
    # re-exported from another module: not defined here, so not collected twice
    write_file(
        site,
        "torchx_plugins/schedulers/reexport.py",
        "from torchx_plugins.schedulers.a import alpha\n",
    )
    factories = registry().get(PluginType.SCHEDULER)
    assert sorted(factories) == ["alpha", "beta", "gamma"]
    assert factories["gamma"]("s") == ("gamma", "s")
    assert registry().load_errors(PluginType.SCHEDULER) == []
    info = registry().sources(PluginType.SCHEDULER)
    assert registry().info(PluginType.SCHEDULER)["beta"] is factories["beta"]
    assert info["beta"].source == "namespace"
    assert info["beta"].module == "torchx_plugins.schedulers.sub.b"
    assert info["beta"].target == "torchx_plugins.schedulers.sub.b:beta"


def test_register_names_and_generic_form(site: Path) -> None:
    write_file(
        site,
        "torchx_plugins/tracker/t.py",
        """
        from torchx.plugins import PluginType, register

        @register.tracker("named_tracker")
        def make(config):
            return ("t", config)

        @register(PluginType.TRACKER, "generic")
        def other(config):
            return ("g", config)

        @register.tracker
        def bare(config):
            return ("b", config)

        def unmarked(config):
            return None
        """,
    )
    trackers = registry().get(PluginType.TRACKER)
    assert {"named_tracker", "generic", "bare"} <= set(trackers)
    assert "unmarked" not in trackers and "make" not in trackers
    assert trackers["generic"]("cfg") == ("g", "cfg")


def test_import_errors_are_recorded_and_warned_not_raised(site: Path) -> None:
    write_file(site, "torchx_plugins/schedulers/good.py", SCHED.format(name="good"))
    write_file(site, "torchx_plugins/schedulers/bad.py", "import plg_missing_dependency\n")
    with pytest.warns(UserWarning, match="torchx_plugins.schedulers.bad"):
        factories = registry().get(PluginType.SCHEDULER)
    assert list(factories) == ["good"]
    errors = registry().errors
    assert len(errors) == 1
    err = errors[0]
    assert isinstance(err, RegistrationError)
    assert err.module == "torchx_plugins.schedulers.bad"
    assert isinstance(err.cause, ModuleNotFoundError)
    assert err.error.startswith("ModuleNotFoundError: ")  # the text, as TorchX
    assert err.plugin_type is PluginType.SCHEDULER


def test_get_is_cached_until_clear(site: Path) -> None:
    write_file(site, "torchx_plugins/schedulers/a.py", SCHED.format(name="alpha"))
    reg = registry()
    assert list(reg.get(PluginType.SCHEDULER)) == ["alpha"]
    write_file(site, "torchx_plugins/schedulers/b.py", SCHED.format(name="beta"))
    assert list(reg.get(PluginType.SCHEDULER)) == ["alpha"]
    assert registry() is reg
    reg.clear()
    assert registry() is not reg  # the singleton was reset too
    assert sorted(registry().get(PluginType.SCHEDULER)) == ["alpha", "beta"]


def test_entry_points_are_deferred_and_win_over_namespace(site: Path) -> None:
    write_file(site, "torchx_plugins/schedulers/a.py", SCHED.format(name="alpha"))
    write_file(
        site, "plg_ep_mod.py", "def make(session_name, **kw):\n    return ('ep', session_name)\n"
    )
    write_dist(
        site,
        "plg_dist",
        {"torchx.schedulers": {"alpha": "plg_ep_mod:make", "e2": "plg_ep_mod:make"}},
    )
    with pytest.warns(UserWarning, match="the entry point wins"):
        factories = registry().get(PluginType.SCHEDULER)
    assert "plg_ep_mod" not in sys.modules  # not imported until used
    assert factories["alpha"]("sess") == ("ep", "sess")
    info = registry().sources(PluginType.SCHEDULER)
    assert info["alpha"].source == "entry_point"
    assert info["alpha"].target == "plg_ep_mod:make"
    [err] = registry().load_errors(PluginType.SCHEDULER)
    assert err.name == "alpha"


def test_duplicate_in_namespace_first_wins(site: Path) -> None:
    write_file(site, "torchx_plugins/schedulers/a.py", SCHED.format(name="alpha"))
    write_file(
        site,
        "torchx_plugins/schedulers/b.py",
        """
        from torchx.plugins import register

        @register.scheduler("alpha")
        def second(session_name, **kwargs):
            return "second"
        """,
    )
    with pytest.warns(UserWarning, match="duplicate torchx.schedulers plugin `alpha`"):
        factories = registry().get(PluginType.SCHEDULER)
    assert factories["alpha"]("s") == ("alpha", "s")


def test_duplicate_equal_named_resource_is_idempotent(site: Path) -> None:
    body = """
    from torchx.plugins import register
    from torchx.specs import Resource

    @register.named_resource(name="same")
    def res_{n}():
        return Resource(cpu=1, gpu=0, memMB=10)

    @register.named_resource(name="differs")
    def diff_{n}():
        return Resource(cpu={n}, gpu=0, memMB=10)
    """
    write_file(site, "torchx_plugins/named_resources/a.py", body.format(n=1))
    write_file(site, "torchx_plugins/named_resources/b.py", body.format(n=2))
    with pytest.warns(UserWarning) as rec:
        factories = registry().get(PluginType.NAMED_RESOURCE)
    assert [str(w.message) for w in rec if "same" in str(w.message)] == []
    assert [e.name for e in registry().errors] == ["differs"]
    assert factories["differs"]().cpu == 1


@pytest.mark.parametrize(
    ("source", "expected"),
    [("0", set()), ("1", {"alpha"}), ("2", {"e1"}), ("3", {"alpha", "e1"})],
)
def test_plugins_source(
    site: Path, monkeypatch: pytest.MonkeyPatch, source: str, expected: set[str]
) -> None:
    write_file(site, "torchx_plugins/schedulers/a.py", SCHED.format(name="alpha"))
    write_file(site, "plg_ep_mod.py", "def make(session_name, **kw):\n    return 1\n")
    write_dist(site, "plg_dist_src", {"torchx.schedulers": {"e1": "plg_ep_mod:make"}})
    monkeypatch.setenv("TORCHX_PLUGINS_SOURCE", source)
    assert set(registry().get(PluginType.SCHEDULER)) == expected


@pytest.mark.parametrize("value", ["x", "4", "", " 3"])
def test_plugins_source_invalid(site: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("TORCHX_PLUGINS_SOURCE", value)
    expected = (
        f"TORCHX_PLUGINS_SOURCE={value!r} is invalid; expected one of 0 (none),"
        " 1 (namespace only), 2 (entry points only), 3 (both)."
    )
    with pytest.raises(ValueError) as e:
        registry()
    assert str(e.value) == expected


def test_project_tracker_entry_point_is_visible(site: Path) -> None:
    # torchx-flow itself declares [torchx.tracker] fsspec
    info = registry().sources(PluginType.TRACKER)
    assert info["fsspec"].target == "torchx.tracker.backend.fsspec:create"


def test_to_dict_and_str(site: Path) -> None:
    write_file(site, "torchx_plugins/schedulers/a.py", SCHED.format(name="alpha"))
    write_file(site, "torchx_plugins/schedulers/bad.py", "raise RuntimeError('boom')\n")
    with pytest.warns(UserWarning, match="boom"):
        d = registry().to_dict()
    assert d["torchx.schedulers"]["alpha"] == {
        "source": "namespace",
        "module": "torchx_plugins.schedulers.a",
        "target": "torchx_plugins.schedulers.a:alpha",
    }
    assert set(d) == {"torchx.schedulers", "torchx.named_resources", "torchx.tracker", "errors"}
    assert d["errors"][0]["module"] == "torchx_plugins.schedulers.bad"
    assert "RuntimeError: boom" in d["errors"][0]["error"]
    assert yaml.safe_load(str(registry())) == d
    all_info = registry().info()
    assert set(all_info) == set(PluginType)
    assert all_info[PluginType.SCHEDULER]["alpha"] is registry().get(PluginType.SCHEDULER)["alpha"]
    assert set(registry().sources()) == set(PluginType)
    # as TorchX: get() is the cached dict, info() a copy
    assert registry().get(PluginType.SCHEDULER) is registry().get(PluginType.SCHEDULER)
    assert registry().info(PluginType.SCHEDULER) is not registry().get(PluginType.SCHEDULER)


def test_explicit_source_argument(site: Path) -> None:
    write_file(site, "torchx_plugins/schedulers/a.py", SCHED.format(name="alpha"))
    assert PluginRegistry(source=0).get(PluginType.SCHEDULER) == {}
    assert list(PluginRegistry(source=1).get(PluginType.SCHEDULER)) == ["alpha"]
