"""Scheduler registry: builtin schedulers plus scheduler plugins, all loaded lazily.

Importing this package, and building the factory dict, imports no scheduler module:
each builtin factory imports its module (``torchx.schedulers.<x>_scheduler``) only when
called. A builtin whose module is not part of this installation is left out.

Plugin schedulers (namespace package ``torchx_plugins.schedulers`` and entry-point group
``torchx.schedulers``, through :mod:`torchx.plugins`) are merged next to the builtins; a
plugin replaces a builtin only by registering the same name. This deliberately fixes
TorchX, where any scheduler plugin hid every builtin.
"""

from __future__ import annotations

import os
import sys
from types import MappingProxyType

# Every local_cwd supervisor imports this package (``torchx.schedulers._local.supervisor``):
# keep it to the standard library's cheapest modules (no typing, collections, importlib.util).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Optional

    from torchx.schedulers._factory import SchedulerFactory
    from torchx.schedulers.api import Scheduler
    from torchx.specs.options import runopts

__all__ = [
    "DEFAULT_SCHEDULER_MODULES",
    "Scheduler",
    "SchedulerFactory",
    "get_default_scheduler_name",
    "get_scheduler_factories",
]


class _Builtin:
    """A builtin scheduler: its module, its extra's install hint and the package it provides.

    A builtin whose ``requires`` package is missing stays listed but is never the default.
    ``opts`` names a light module whose ``run_opts()`` gives the scheduler's run options
    without importing the scheduler (``torchx runopts``).
    """

    __slots__ = ("module", "err", "requires", "opts")

    def __init__(
        self, module: str, err: Optional[str] = None, requires: str = "", opts: str = ""
    ) -> None:
        self.module = module
        self.err = err  # install hint when the module's third-party import fails
        self.requires = requires
        self.opts = opts


_BUILTINS: Mapping[str, _Builtin] = MappingProxyType(
    {
        "local_docker": _Builtin(
            "torchx.schedulers.docker_scheduler", "pip install 'torchx-flow[docker]'", "docker"
        ),
        "local_cwd": _Builtin(
            "torchx.schedulers.local_scheduler", opts="torchx.schedulers._local._opts"
        ),
        "slurm": _Builtin("torchx.schedulers.slurm_scheduler"),
        "kubernetes": _Builtin(
            "torchx.schedulers.kubernetes_scheduler",
            "pip install 'torchx-flow[kubernetes]'",
            "kubernetes",
        ),
    }
)

DEFAULT_SCHEDULER_MODULES: Mapping[str, str] = MappingProxyType(
    {name: builtin.module for name, builtin in _BUILTINS.items()}
)
"""Builtin scheduler name -> module exposing ``create_scheduler``, in TorchX order."""


class _LazyFactory:
    """A builtin scheduler factory that imports its module on the first call."""

    def __init__(self, name: str, builtin: _Builtin) -> None:
        self._name = name
        self._builtin = builtin

    def __call__(self, session_name: str, **kwargs: Any) -> Scheduler[Any]:
        module = _import_builtin(self._name, self._builtin)
        scheduler: Scheduler[Any] = module.create_scheduler(session_name, **kwargs)
        return scheduler

    def static_run_opts(self) -> Optional[runopts]:
        """The scheduler's ``run_opts()`` without importing it, or None when that needs it."""
        if not self._builtin.opts:
            return None
        from importlib import import_module  # lazy: not in local_cwd supervisors

        opts: runopts = import_module(self._builtin.opts).run_opts()
        return opts

    def usable(self) -> bool:
        """Whether the package the scheduler's extra provides is installed (no import)."""
        return not self._builtin.requires or _module_available(self._builtin.requires)

    def __repr__(self) -> str:
        return f"<lazy scheduler factory {self._builtin.module}:create_scheduler>"


def _import_builtin(name: str, builtin: _Builtin) -> Any:
    try:
        from importlib import import_module  # lazy: not in local_cwd supervisors

        return import_module(builtin.module)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        if builtin.err is None or missing.split(".")[0] == "torchx":
            raise
        raise ModuleNotFoundError(
            f"scheduler `{name}` needs the package `{missing}`, which is not installed;"
            f" install it with: {builtin.err}",
            name=missing,
        ) from e


def _module_available(module: str) -> bool:
    try:
        import importlib.util  # lazy: ~8 ms, not in local_cwd supervisors

        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _builtin_factories() -> dict[str, SchedulerFactory]:
    factories: dict[str, SchedulerFactory] = {}
    for name, builtin in _BUILTINS.items():
        if _module_available(builtin.module):
            factories[name] = _LazyFactory(name, builtin)
    return factories


def get_scheduler_factories(*, skip_defaults: bool = False) -> dict[str, SchedulerFactory]:
    """Returns the scheduler factories by name: builtins first, then plugins.

    Args:
        skip_defaults: return only the plugin schedulers.

    Returns:
        ``{name: factory}``. Builtins keep TorchX's order (``local_docker``,
        ``local_cwd``, ``slurm``, ``kubernetes``; only those installed appear);
        a plugin with a builtin's name replaces it in place, other plugins follow.
    """
    found: Mapping[str, SchedulerFactory] = {}
    if _may_have_plugin_schedulers():
        from torchx import plugins  # lazy: the plugin registry ~10 ms, only if one may exist

        found = plugins.registry().get(plugins.PluginType.SCHEDULER)
    if skip_defaults:
        return dict(found)
    factories = _builtin_factories()
    factories.update(found)
    return factories


def _may_have_plugin_schedulers() -> bool:
    """Whether a scheduler plugin may exist (if not, the plugin registry is not imported).

    The registry costs ~10 ms (dataclasses, typing). The answer is False only when no
    ``sys.path`` entry is a file (a zip) or holds a ``torchx_plugins`` directory, no installed
    distribution may declare ``torchx.schedulers`` entry points, and the registry was not
    imported already (then its state counts).
    """
    from torchx.util.entrypoints import (  # lazy: ~2 ms, not in local_cwd supervisors
        group_may_have_entry_points,
    )

    if "torchx.plugins._registry" in sys.modules or "torchx_plugins" in sys.modules:
        return True
    for entry in sys.path:
        folder = entry or "."
        if os.path.isdir(folder):
            if os.path.isdir(os.path.join(folder, "torchx_plugins")):
                return True
        elif os.path.exists(folder):
            return True  # a zip or another file: only the registry can look inside
    return group_may_have_entry_points("torchx.schedulers")


def get_default_scheduler_name() -> str:
    """Returns the name of the first usable registered scheduler (the CLI's default).

    A builtin whose extra is not installed (``local_docker`` without the ``docker`` package)
    stays registered, so ``-s local_docker`` names the extra to install, but it is skipped here:
    a plain ``torchx run`` then uses the next one (``local_cwd``).

    Raises:
        RuntimeError: if no scheduler is registered at all.
    """
    factories = get_scheduler_factories()
    for name, factory in factories.items():
        if not isinstance(factory, _LazyFactory) or factory.usable():
            return name
    for name in factories:
        return name
    raise RuntimeError(
        "no schedulers are registered; reinstall torchx-flow or install a scheduler plugin"
    )


def __getattr__(name: str) -> Any:
    # ``plugins`` (importlib.metadata) and ``SchedulerFactory`` (typing) are imported on first
    # use, which every local_cwd supervisor would otherwise pay for.
    if name == "plugins":
        from torchx import plugins as module  # lazy: ~10 ms, not in local_cwd supervisors

        globals()["plugins"] = module
        return module
    if name == "SchedulerFactory":
        from torchx.schedulers._factory import (  # lazy: typing ~8 ms, not in local_cwd supervisors
            SchedulerFactory,
        )

        globals()["SchedulerFactory"] = SchedulerFactory
        return SchedulerFactory
    if name == "Scheduler":
        from torchx.schedulers.api import Scheduler  # lazy: ~25 ms, not in local_cwd supervisors

        globals()["Scheduler"] = Scheduler
        return Scheduler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
