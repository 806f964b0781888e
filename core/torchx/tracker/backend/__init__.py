"""Tracker backends shipped with torchx-flow."""

__all__: list[str] = []
