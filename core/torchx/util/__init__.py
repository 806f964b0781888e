"""Small utilities shared by the torchx packages (types, strings, entry points, modules, io)."""

from __future__ import annotations

__all__: list[str] = []
