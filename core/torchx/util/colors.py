"""ANSI colour codes for terminal output; every code is ``""`` when stdout is not a terminal.

Defined here, in the bottom layer, so any torchx module may colour its output;
:mod:`torchx.cli.colors` (TorchX's other path) re-exports them.
"""

import sys

__all__ = ["BLUE", "BOLD", "CYAN", "ENDC", "GRAY", "GREEN", "ORANGE", "RED", "YELLOW"]

_TTY: bool = bool(sys.stdout is not None and sys.stdout.isatty())

GREEN = "\033[32m" if _TTY else ""
ORANGE = "\033[38:2:238:76:44m" if _TTY else ""
YELLOW = "\033[33m" if _TTY else ""
RED = "\033[31m" if _TTY else ""
BLUE = "\033[34m" if _TTY else ""
CYAN = "\033[36m" if _TTY else ""
GRAY = "\033[2m" if _TTY else ""
BOLD = "\033[1m" if _TTY else ""
ENDC = "\033[0m" if _TTY else ""
