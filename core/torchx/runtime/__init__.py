"""Helpers that applications use at run time (inside the job)."""

__all__: list[str] = []
