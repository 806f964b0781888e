"""ANSI colour codes for CLI output (the codes of :mod:`torchx.util.colors`, re-exported)."""

from torchx.util.colors import BLUE, BOLD, CYAN, ENDC, GRAY, GREEN, ORANGE, RED, YELLOW

__all__ = ["BLUE", "BOLD", "CYAN", "ENDC", "GRAY", "GREEN", "ORANGE", "RED", "YELLOW"]
