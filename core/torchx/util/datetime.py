"""Date and time helpers."""

from __future__ import annotations

from datetime import datetime, timedelta

__all__ = ["get_past_epoch_time"]


def get_past_epoch_time(days_past: int) -> int:
    """Returns the Unix time (whole seconds) of ``days_past`` days before now."""
    return int((datetime.now() - timedelta(days=days_past)).timestamp())
