"""Paths torchx uses, as strings: no ``pathlib`` (~3 ms of a ``torchx run`` start)."""

from __future__ import annotations

import os
import sys

__all__ = ["home_dir", "torchx_home_dir"]


def torchx_home_dir(*subdir_paths: str) -> str:
    """:func:`torchx.specs.TORCHX_HOME` as a string, without importing ``pathlib``.

    Args:
        subdir_paths: sub-directories to join onto the home directory.

    Returns:
        The joined path; the directory is created if it does not exist.
    """
    env = os.environ.get("TORCHX_HOME")
    root = os.path.expanduser(env) if env else os.path.join(home_dir(), ".torchx")
    path = os.path.join(root, *subdir_paths)
    if not os.path.isdir(path):  # one system call when it exists (a launch asks several times)
        os.makedirs(path, exist_ok=True)
    return path


def home_dir() -> str:
    """``str(pathlib.Path.home())``, without importing ``pathlib`` when nothing else has.

    Both are ``os.path.expanduser("~")``, normalized; but code (tests, mostly) patches
    ``Path.home`` to move TorchX's home directory, so once ``pathlib`` is imported it is asked.
    """
    pathlib = sys.modules.get("pathlib")
    if pathlib is not None:
        return str(pathlib.Path.home())
    return os.path.normpath(os.path.expanduser("~"))
