"""Random, readable ids for scheduler apps (``make_unique``, ``random_id``)."""

from __future__ import annotations

import os

__all__ = [
    "END_CANDIDATES",
    "START_CANDIDATES",
    "get_len_random_id",
    "make_unique",
    "random_id",
    "random_uint64",
]

START_CANDIDATES: str = "bcdfghjklmnpqrstvwxz"
"""Characters an id may start with (consonants: ids are valid Kubernetes names)."""

END_CANDIDATES: str = START_CANDIDATES + "012345679"
"""Characters of the rest of an id."""

_FIRST_CHARS = START_CANDIDATES
_OTHER_CHARS = END_CANDIDATES


def random_uint64() -> int:
    """Returns a random unsigned 64-bit integer from ``os.urandom`` (not ``random.seed``)."""
    return int.from_bytes(os.urandom(8), "big")


def make_unique(name: str, string_length: int = 0) -> str:
    """Append a random id to ``name``: ``"{name}-{id}"``.

    Args:
        name: the prefix, usually the app name.
        string_length: if positive, the exact length of the random part.

    Returns:
        The unique name.
    """
    suffix = get_len_random_id(string_length) if string_length > 0 else random_id()
    return f"{name}-{suffix}"


def random_id(max_length: int | None = None) -> str:
    """Return a random id that starts with a consonant and uses only easily read characters.

    It is a base conversion of 8 random bytes: the first digit comes from
    ``bcdfghjklmnpqrstvwxz``, later digits from that set plus ``012345679``.

    Args:
        max_length: if given, the id is at most this long (``""`` when it is not positive).

    Returns:
        The id, typically 12 to 14 characters long.
    """
    if max_length is not None and max_length <= 0:
        return ""
    value = random_uint64()
    value, digit = divmod(value, len(_FIRST_CHARS))
    chars = [_FIRST_CHARS[digit]]
    while value:
        value, digit = divmod(value, len(_OTHER_CHARS))
        chars.append(_OTHER_CHARS[digit])
    return "".join(chars[:max_length])


def get_len_random_id(string_length: int) -> str:
    """Return a random id of exactly ``string_length`` characters (see ``random_id``).

    Args:
        string_length: the length wanted; must be positive.

    Returns:
        The id.

    Raises:
        ValueError: ``string_length`` is not positive.
    """
    if string_length <= 0:
        raise ValueError(f"string_length must be positive, got {string_length}")
    out = ""
    while len(out) < string_length:
        out += random_id() if not out else random_id()[1:]
    return out[:string_length]
