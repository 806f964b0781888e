"""Logging handlers that torchx events can be sent to."""

from __future__ import annotations

import logging

__all__ = ["get_logging_handler"]

_HANDLER_TYPES: dict[str, type[logging.Handler]] = {
    "console": logging.StreamHandler,
    "null": logging.NullHandler,
}


def get_logging_handler(destination: str = "null") -> logging.Handler:
    """Returns a new handler for an event destination.

    Args:
        destination: ``"console"`` (a ``StreamHandler`` on stderr) or ``"null"`` (discards).

    Returns:
        The handler to attach to the destination's events logger.

    Raises:
        KeyError: for an unknown destination.
    """
    handler_type = _HANDLER_TYPES.get(destination)
    if handler_type is None:
        import difflib  # lazy: only for the error (its import compiles regexes, ~2 ms)

        close = difflib.get_close_matches(destination, list(_HANDLER_TYPES), n=1)
        hint = f" Did you mean `{close[0]}`?" if close else ""
        raise KeyError(
            f"unknown event destination `{destination}`; expected one of"
            f" {sorted(_HANDLER_TYPES)}.{hint}"
        )
    return handler_type()
