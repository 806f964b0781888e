"""The terminal's width without importing ``shutil``.

``shutil`` imports ``bz2``, ``lzma`` and ``fnmatch``: ~2 ms of a ``torchx run`` start, spent
only because argparse's help formatter asks ``shutil.get_terminal_size`` for the width when
none is given, and a parser creates a formatter for every ``add_argument``.
"""

from __future__ import annotations

import os
import sys

__all__ = ["terminal_columns"]

_FALLBACK = 80


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``, computed the same way.

    ``$COLUMNS`` when it is a positive integer, else the width of the terminal on the
    process's original stdout, else 80.
    """
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return _FALLBACK
    return columns if columns > 0 else _FALLBACK
