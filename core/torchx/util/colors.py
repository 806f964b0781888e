"""ANSI colour codes for terminal output (empty strings when stdout is not a terminal).

The same codes as :mod:`torchx.cli.colors`, at the module path TorchX also has.
"""

from torchx.cli.colors import BLUE, BOLD, CYAN, ENDC, GRAY, GREEN, ORANGE, RED, YELLOW

__all__ = ["BLUE", "BOLD", "CYAN", "ENDC", "GRAY", "GREEN", "ORANGE", "RED", "YELLOW"]
