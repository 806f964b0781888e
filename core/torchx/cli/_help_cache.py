"""``torchx --help`` from a cached text, without importing ``argparse`` (private).

Building the parser costs ``argparse`` (with ``re``, ``enum``, ``gettext``): about half of a
bare interpreter start. So the text that argparse printed for ``torchx --help`` is stored as a
section of the one start-up cache (:mod:`torchx.cli._startup_cache`, which also explains
validity) and a later ``torchx --help`` (or ``-h``) prints it as is.

The section's name holds the help width (``$COLUMNS`` or the terminal's) and the locale
variables (argparse's words go through ``gettext``); it depends, besides the cache's shared
stat list (a ``torchx.cli.cmds`` plugin installed or removed shows there), on the source files
that shape the text (``main.py``, ``_lazy.py``, ``version.py``). The text is stored only when no
``torchx.cli.cmds`` plugin exists.
"""

from __future__ import annotations

import os
import sys

from torchx.cli import _startup_cache
from torchx.util.terminal import terminal_columns

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "HELP_ARGS",
    "cached_help",
    "print_cached_help",
    "section_name",
    "store_help",
]

HELP_ARGS = (["--help"], ["-h"])
"""The command lines served from the cache (exactly these)."""

_LOCALE_VARS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def section_name() -> str:
    """The start-up cache section of the help text for this width and locale.

    The locale variables are named by a CRC of their values (the cache holds no value).
    """
    import binascii  # lazy: 0.15 ms; torchx run and the listings never compute it

    locale = "\x1f".join(os.environ.get(name, "") for name in _LOCALE_VARS)
    crc = binascii.crc32(locale.encode("utf-8", "surrogateescape"))
    return f"help width={terminal_columns()} locale={crc:08x}"


def _sources() -> list[str]:
    here = os.path.dirname(os.path.abspath(__file__))
    package = os.path.dirname(here)
    names = ("main.py", "_lazy.py", "_help_cache.py")
    return [*(os.path.join(here, n) for n in names), os.path.join(package, "version.py")]


def cached_help(argv: Sequence[str]) -> str | None:
    """Returns the stored help text when ``argv`` asks for it and the entry is valid.

    Args:
        argv: the command line after ``torchx``.
    """
    if list(argv) not in HELP_ARGS:
        return None

    return _startup_cache.load(section_name())


def store_help(text: str) -> bool:
    """Stores ``text`` (argparse's ``torchx --help``) in the start-up cache.

    Call it only when no ``torchx.cli.cmds`` plugin exists. Errors are ignored.

    Args:
        text: the help text, exactly as argparse prints it.

    Returns:
        Whether an entry was written (False when it could not be trusted).
    """
    return _startup_cache.store(section_name(), text, _sources())


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
