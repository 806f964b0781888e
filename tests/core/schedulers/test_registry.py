"""The lazy scheduler registry in ``torchx.schedulers`` (builtins merged with plugins)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support import write_dist

from torchx import plugins
from torchx.schedulers import (
    DEFAULT_SCHEDULER_MODULES,
    _Builtin,
    _import_builtin,
    get_default_scheduler_name,
    get_scheduler_factories,
)

TORCHX_ORDER = ["local_docker", "local_cwd", "slurm", "kubernetes"]

PLUGIN_MODULE = """
def create_custom(session_name, **kwargs):
    return ("custom", session_name, kwargs)

def create_local(session_name, **kwargs):
    return ("replaced-local", session_name, kwargs)
"""


def _call(factory: Any, *args: Any, **kwargs: Any) -> Any:
    return factory(*args, **kwargs)


def _installed_builtins() -> list[str]:
    return [
        name
        for name, module in DEFAULT_SCHEDULER_MODULES.items()
        if importlib.util.find_spec(module) is not None
    ]


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("TORCHX_PLUGINS_SOURCE", raising=False)
    plugins.registry.cache_clear()
    yield
    plugins.registry.cache_clear()


@pytest.fixture
def install_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Installs an entry-point distribution declaring the given scheduler entry points."""

    def install(entry_points: dict[str, str]) -> None:
        (tmp_path / "tmp_sched_plugin.py").write_text(PLUGIN_MODULE)
        write_dist(tmp_path, "tmp_sched_plugin", {"torchx.schedulers": entry_points})
        monkeypatch.syspath_prepend(str(tmp_path))
        plugins.registry.cache_clear()

    return install


def test_default_modules_in_torchx_order() -> None:
    assert list(DEFAULT_SCHEDULER_MODULES) == TORCHX_ORDER
    assert DEFAULT_SCHEDULER_MODULES["local_cwd"] == "torchx.schedulers.local_scheduler"
    assert DEFAULT_SCHEDULER_MODULES["kubernetes"] == "torchx.schedulers.kubernetes_scheduler"
    with pytest.raises(TypeError):
        DEFAULT_SCHEDULER_MODULES["x"] = "y"  # type: ignore[index]


def test_only_installed_builtins_are_registered() -> None:
    factories = get_scheduler_factories()
    assert list(factories) == _installed_builtins()
    assert "local_cwd" in factories


def test_default_is_first_available_builtin_in_torchx_order() -> None:
    installed = _installed_builtins()
    assert get_default_scheduler_name() == installed[0]
    if "local_docker" not in installed:
        assert get_default_scheduler_name() == "local_cwd"


def test_registry_is_lazy() -> None:
    code = textwrap.dedent(
        """
        import sys
        import torchx.schedulers as s
        factories = s.get_scheduler_factories()
        assert "local_cwd" in factories, factories
        loaded = [m for m in sys.modules if m.endswith("_scheduler") or m.startswith(("kubernetes", "docker"))]
        print(loaded)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_factory_imports_its_module_when_called() -> None:
    factory = get_scheduler_factories()["local_cwd"]
    scheduler = factory("sess")
    try:
        assert scheduler.session_name == "sess"
        assert type(scheduler).__module__.startswith("torchx.schedulers.local")
    finally:
        scheduler.close()


def test_missing_third_party_package_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "needs_missing_dep.py").write_text("import surely_not_installed_pkg_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    builtin = _Builtin("needs_missing_dep", "pip install 'torchx-flow[docker]'")
    with pytest.raises(ImportError, match=r"pip install 'torchx-flow\[docker\]'") as info:
        _import_builtin("local_docker", builtin)
    assert isinstance(info.value, ModuleNotFoundError)
    assert "surely_not_installed_pkg_xyz" in str(info.value)
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_plugin_scheduler_is_merged_next_to_builtins(install_plugins: Any) -> None:
    install_plugins({"custom": "tmp_sched_plugin:create_custom"})
    factories = get_scheduler_factories()
    assert list(factories) == [*_installed_builtins(), "custom"]
    assert _call(factories["custom"], "sess", a=1) == ("custom", "sess", {"a": 1})
    assert get_default_scheduler_name() == _installed_builtins()[0]


def test_plugin_with_a_builtin_name_replaces_it(install_plugins: Any) -> None:
    install_plugins({"local_cwd": "tmp_sched_plugin:create_local"})
    factories = get_scheduler_factories()
    assert list(factories) == _installed_builtins()
    assert _call(factories["local_cwd"], "s") == ("replaced-local", "s", {})


def test_skip_defaults_returns_plugins_only(install_plugins: Any) -> None:
    assert get_scheduler_factories(skip_defaults=True) == {}
    install_plugins({"custom": "tmp_sched_plugin:create_custom"})
    assert list(get_scheduler_factories(skip_defaults=True)) == ["custom"]


def test_static_run_opts_of_local_cwd_are_the_schedulers() -> None:
    from torchx.runner.config_io import scheduler_run_opts
    from torchx.schedulers.local_scheduler import Opts, create_scheduler

    factory: Any = get_scheduler_factories()["local_cwd"]
    static = factory.static_run_opts()
    scheduler = create_scheduler("_")
    try:
        real = scheduler.run_opts()
    finally:
        scheduler.close()
    assert repr(static) == repr(real) and static._opts == real._opts
    assert repr(scheduler_run_opts("local_cwd", get_scheduler_factories())) == repr(real)
    assert Opts.__module__ == "torchx.schedulers._local._opts"


def test_plugin_replacing_local_cwd_gives_its_own_run_opts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.runner.config_io import scheduler_run_opts

    (tmp_path / "tmp_opts_plugin.py").write_text(
        textwrap.dedent(
            """
            class _WithOpts:
                def run_opts(self):
                    from torchx.specs import runopts
                    opts = runopts()
                    opts.add("only_mine", type_=str, help="the plugin's", default="x")
                    return opts

            def create(session_name, **kwargs):
                return _WithOpts()
            """
        )
    )
    write_dist(
        tmp_path, "tmp_opts_plugin", {"torchx.schedulers": {"local_cwd": "tmp_opts_plugin:create"}}
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.registry.cache_clear()
    opts = scheduler_run_opts("local_cwd", get_scheduler_factories())
    assert list(opts._opts) == ["only_mine"]
