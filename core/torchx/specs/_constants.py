"""Constants and small helpers of ``torchx.specs`` (re-exported from :mod:`torchx.specs.api`)."""

from __future__ import annotations

import re
from typing import Any

from torchx.util.paths import torchx_home_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "MISSING",
    "NONE",
    "UNKNOWN",
    "ALL",
    "NA",
    "TORCHX_CONTEXT_NAME",
    "app_metadata",
    "TORCHX_HOME",
    "get_type_name",
    "cases",
]

MISSING: str = "<MISSING>"
"""A string attribute that was never set (default of ``Role.entrypoint``)."""

NONE: str = "<NONE>"
"""An optional string that is unset (e.g. ``structured_error_msg``)."""

UNKNOWN: str = "<UNKNOWN>"
"""A value that could not be determined on read-back."""

ALL: str = "all"
"""The "every scheduler" backend."""

NA: str = "<<NA>>"
"""A metadata value that is not available."""

TORCHX_CONTEXT_NAME: str = "TORCHX_CONTEXT_NAME"
"""Name of the env var holding the calling context (``torchx run`` sets ``cli_run``)."""


class app_metadata:
    """Well-known ``AppDef.metadata`` keys."""

    CONTEXT = "torchx/context"
    VERSION = "torchx/version"
    SCHEDULER = "torchx/scheduler"
    ROLES_PREFIX = "torchx/roles."


def TORCHX_HOME(*subdir_paths: str) -> Path:
    """Returns the torchx dot-directory (``$TORCHX_HOME``, default ``~/.torchx``).

    Args:
        subdir_paths: sub-directories to join onto the home directory.

    Returns:
        The joined path; the directory is created if it does not exist.
    """
    from pathlib import Path  # lazy: pathlib ~4 ms (urllib, ipaddress); runopts skips it

    return Path(torchx_home_dir(*subdir_paths))


def get_type_name(tp: Any) -> str:
    """Returns a short display name for a type.

    Args:
        tp: a class or a ``typing`` construct.

    Returns:
        ``tp.__name__`` for non-``typing`` classes (``list[str]`` shows as
        ``list``), ``str(tp)`` otherwise.
    """
    if getattr(tp, "__module__", None) != "typing" and hasattr(tp, "__name__"):
        return str(tp.__name__)
    return str(tp)


_CAMEL_BOUNDARY_1 = re.compile(r"(.)([A-Z][a-z]+)")
_CAMEL_BOUNDARY_2 = re.compile(r"([a-z0-9])([A-Z])")


class cases:
    """Converters between ``snake_case`` and ``camelCase`` names."""

    @staticmethod
    def snake_to_camel(name: str) -> str:
        """Converts ``snake_case`` to ``camelCase`` (``log_dir`` -> ``logDir``).

        Args:
            name: a snake_case name.

        Returns:
            The camelCase spelling.
        """
        head, *rest = name.split("_")
        return head + "".join(part[:1].upper() + part[1:] for part in rest)

    @staticmethod
    def camel_to_snake(name: str) -> str:
        """Converts ``camelCase`` to ``snake_case`` (``logDir`` -> ``log_dir``).

        Args:
            name: a camelCase (or PascalCase) name.

        Returns:
            The snake_case spelling.
        """
        partial = _CAMEL_BOUNDARY_1.sub(r"\1_\2", name)
        return _CAMEL_BOUNDARY_2.sub(r"\1_\2", partial).lower()
