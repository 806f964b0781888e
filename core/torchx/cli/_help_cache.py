"""``torchx --help`` from a cached text, without importing ``argparse`` (private).

Building the parser costs ``argparse`` (with ``re``, ``enum``, ``gettext``): about half of a
bare interpreter start. So the text that argparse printed for ``torchx --help`` is stored
under ``$TORCHX_HOME/cache/`` (like the component index, :mod:`torchx.cli._component_index`)
next to a *stat list*, and a later ``torchx --help`` (or ``-h``) that finds every file of
the list unchanged prints it as is.

The text is stored only when no ``torchx.cli.cmds`` plugin exists (plugins add commands to
the help, and a plugin may fail to load: that error must show). The stat list holds every
``sys.path`` entry and the ``entry_points.txt`` of every distribution on it (present or
not), so a plugin installed or removed invalidates the entry, and the source files that
shape the text (``main.py``, ``_lazy.py``, ``version.py``). The key holds the interpreter,
its version, ``sys.path``, the torchx version, the help width (``$COLUMNS`` or the
terminal's) and the locale variables (argparse's words go through ``gettext``). As with the
component index, nothing is stored when a custom distribution finder is installed or a
recorded file changed in the last ``RACY_SECONDS``; any error reading or writing the cache
means argparse prints the help.
"""

from __future__ import annotations

import os
import sys

from torchx.util import stat_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "HELP_ARGS",
    "cached_help",
    "help_path",
    "print_cached_help",
    "store_help",
    "terminal_columns",
]

HELP_ARGS = (["--help"], ["-h"])
"""The command lines served from the cache (exactly these)."""

_FORMAT = "torchx-help 1"
MAX_ENTRIES = 16  # help texts kept (one per interpreter, sys.path, width and locale)
_LOCALE_VARS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` without importing shutil (bz2, lzma, ...).

    ``_lazy.HelpFormatter`` sizes the help with it, and the cache key holds it.
    """
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


def _key() -> str:
    from torchx.version import __version__

    locale = [f"{name}={os.environ.get(name, '')}" for name in _LOCALE_VARS]
    paths = [os.path.abspath(p) for p in sys.path]
    return "\x1f".join(
        [sys.executable, sys.version, __version__, f"width={terminal_columns()}", *locale, *paths]
    )


def _sources() -> list[str]:
    here = os.path.dirname(os.path.abspath(__file__))
    package = os.path.dirname(here)
    names = ("main.py", "_lazy.py", "_help_cache.py")
    return [*(os.path.join(here, n) for n in names), os.path.join(package, "version.py")]


def help_path() -> str:
    """Returns the cache file of this interpreter, ``sys.path`` and width (not created)."""
    return stat_cache.cache_file("help-", _key(), ".txt")


def cached_help(argv: Sequence[str]) -> str | None:
    """Returns the stored help text when ``argv`` asks for it and the entry is valid.

    Args:
        argv: the command line after ``torchx``.
    """
    if list(argv) not in HELP_ARGS:
        return None
    try:
        with open(help_path(), encoding="utf-8", errors="surrogateescape") as f:
            head, sep, text = f.read().partition("\ntext\n")
    except OSError:
        return None
    lines = head.split("\n")
    if not sep or len(lines) < 2 or lines[0] != _FORMAT or lines[1] != "key " + _key():
        return None
    for line in lines[2:]:
        kind, _, rest = line.partition(" ")
        sig, _, path = rest.partition(" ")
        if kind != "stat" or stat_cache.signature(path) != sig:
            return None
    return text


def store_help(text: str) -> bool:
    """Stores ``text`` (argparse's ``torchx --help``) with the current stat list.

    Call it only when no ``torchx.cli.cmds`` plugin exists. Errors are ignored.

    Args:
        text: the help text, exactly as argparse prints it.

    Returns:
        Whether an entry was written (False when it could not be trusted).
    """
    entries = stat_cache.path_entries()
    if entries is None:
        return False
    stats = stat_cache.stat_list([*entries, *_sources()])
    if stats is None or any("\n" in p for p in [*(p for p, _ in stats), _key()]):
        return False
    lines = [_FORMAT, "key " + _key(), *(f"stat {sig} {path}" for path, sig in stats)]
    path = help_path()
    data = ("\n".join(lines) + "\ntext\n" + text).encode("utf-8", "surrogateescape")
    if not stat_cache.write_atomic(path, data):
        return False
    stat_cache.evict(os.path.dirname(path), "help-", ".txt", MAX_ENTRIES)
    return True


def print_cached_help(argv: Sequence[str]) -> None:
    """Prints the stored help and exits 0 like argparse's ``--help``; returns on a miss.

    Args:
        argv: the command line after ``torchx``.
    """
    text = cached_help(argv)
    if text is None:
        return
    try:  # as ``ArgumentParser._print_message``
        sys.stdout.write(text)
    except (AttributeError, OSError):
        pass
    sys.exit(0)
