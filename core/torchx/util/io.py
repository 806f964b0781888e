"""Reading component and config files (``torchx.util.io``).

``read_conf_file`` prefers a file on disk; otherwise it asks the ``torchx.file`` entry point
(``get_file_contents = module:fn``, where ``fn(path) -> str | None``) and finally falls back to
the files shipped inside the ``torchx`` package.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import torchx
from torchx.util import entrypoints

__all__ = ["COMPONENTS_DIR", "get_abspath", "get_file_contents", "read_conf_file"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    COMPONENTS_DIR: Path
    """Where the builtin components live, relative to the directory that holds ``torchx``."""


def __getattr__(name: str) -> object:
    # ``COMPONENTS_DIR`` (a ``Path``) is built on first use: pathlib costs ~3 ms of the start
    # of every ``torchx run``, which imports this module
    if name == "COMPONENTS_DIR":
        from pathlib import Path  # lazy: ~3 ms of a ``torchx run`` start (urllib, ipaddress)

        return Path("torchx/components")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_abspath(relpath: str) -> str:
    """Returns ``relpath`` joined onto the directory that holds the ``torchx`` package.

    ``get_abspath("torchx/components/dist.py")`` is the builtin ``dist`` components file.
    """
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(torchx.__file__))), relpath)


def get_file_contents(conf_file: str) -> str | None:
    """Default builtin lookup: reads ``conf_file`` relative to the ``torchx`` package.

    Both ``components/dist.py`` (relative to the package directory) and
    ``torchx/components/dist.py`` (relative to its parent) resolve.

    Args:
        conf_file: a relative path.

    Returns:
        The file contents, or None when no such builtin file exists.
    """
    pkg_dir = os.path.dirname(os.path.realpath(torchx.__file__))
    for root in (pkg_dir, os.path.dirname(pkg_dir)):
        candidate = os.path.join(root, conf_file)
        if os.path.isfile(candidate):
            with open(candidate) as f:
                return f.read()
    return None


def _builtin_lookup() -> Callable[[str], str | None]:
    fn = entrypoints.load("torchx.file", "get_file_contents", default=None)
    return fn if callable(fn) else get_file_contents


def read_conf_file(conf_file: str) -> str:
    """Returns the contents of ``conf_file``: a file on disk, else a builtin file.

    Args:
        conf_file: a path on disk or the path of a builtin file.

    Returns:
        The file contents.

    Raises:
        FileNotFoundError: neither a file on disk nor a builtin.
    """
    if os.path.isfile(conf_file):
        with open(conf_file) as f:
            return f.read()
    data = _builtin_lookup()(conf_file)
    if data is None:
        raise FileNotFoundError(
            f"{conf_file} does not exist and is not a builtin."
            " For a list of available builtins run `torchx builtins`"
        )
    return data
