"""String helpers."""

from __future__ import annotations

import re

__all__ = ["normalize_str"]

_DISALLOWED = re.compile(r"[^a-z0-9-]")


def normalize_str(data: str) -> str:
    """Normalizes a string into a form accepted as a Kubernetes-style name.

    Lower-cases the string, removes every character outside ``[a-z0-9-]`` and
    strips leading dashes, e.g. ``"Trainer_0"`` becomes ``"trainer0"``.

    Args:
        data: the string to normalize.

    Returns:
        The normalized string (possibly empty).
    """
    return _DISALLOWED.sub("", data.lower()).lstrip("-")
