"""Logging set-up of the ``torchx`` command, deferred until ``logging`` is imported (private).

Importing ``logging`` (with ``traceback``, ``string``, ``threading``, ...) is several
milliseconds of a start, and the listing commands (``torchx builtins``, ``torchx runopts``)
never log. :func:`configure` sets up the root logger at once when ``logging`` is already
imported; otherwise right after the first ``import logging`` of the process completes, before
the importing module goes on, so no record can be emitted unconfigured.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

__all__ = ["configure"]


def _basic_config(logging: ModuleType, level: str) -> None:
    from torchx.cli import colors  # lazy: only once logging is imported

    logging.basicConfig(
        level=int(level) if level.isdigit() else level,
        format=f"{colors.GRAY}torchx{colors.ENDC} %(asctime)s %(levelname)-8s %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
    )
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        # urllib3 warns once per retry of an unreachable server (Kubernetes API, registry);
        # the command ends with one line that says so. --log_level DEBUG shows the retries.
        logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)


class _ConfigureOnImport:
    """A ``sys.meta_path`` finder that configures ``logging`` once it has been executed."""

    def __init__(self, level: str) -> None:
        self.level = level

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name != "logging":
            return None
        from importlib.machinery import PathFinder  # lazy: in the import hook only

        spec = PathFinder.find_spec(name, path)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_then_configure(module: ModuleType) -> None:
            exec_module(module)
            if self in sys.meta_path:  # a find_spec() probe alone does not configure
                sys.meta_path.remove(self)
            _basic_config(module, self.level)

        loader.exec_module = exec_then_configure  # type: ignore[method-assign]
        return spec


def configure(level: str) -> None:
    """Configures the root logger (``torchx <time> <LEVEL> <message>`` on stderr at ``level``).

    Args:
        level: a level name (``INFO``) or number (``20``).
    """
    logging = sys.modules.get("logging")
    if logging is not None:
        _basic_config(logging, level)
    else:
        sys.meta_path.insert(0, _ConfigureOnImport(level))
