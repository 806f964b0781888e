"""Text helpers for ``AppStatus.format`` (what ``torchx status`` prints) and its error summary.

Plain text in, text out: the status types stay in :mod:`torchx.specs._state`, which calls
these (so this module never imports it).
"""

from __future__ import annotations

import json
import re
from typing import Any

from torchx.specs._constants import NONE

__all__ = ["error_summary", "format_error_message", "replica_text"]

_NOT_AVAILABLE = "<N/A>"
_NO_REPLY_STATES = ("FAILED", "CANCELLED")
_RPC_BLOCK = re.compile(r"\('(On WorkerInfo\(.*?\):.*)'\)", re.DOTALL)
_ERROR_HEADER = "    error_msg: "


def format_error_message(msg: str, header: str, width: int = 80) -> str:
    """Wraps ``msg`` on spaces so that lines fit ``width``, starting with ``header``.

    Continuation lines are indented by ``len(header)`` spaces; newlines in
    ``msg`` start new (indented) lines.

    Args:
        msg: the message to wrap.
        header: the prefix of the first line.
        width: the maximum line width (a single long word may exceed it).

    Returns:
        The wrapped text.
    """
    indent = " " * len(header)
    lines: list[str] = []
    prefix = header
    for paragraph in msg.split("\n"):
        line, empty = prefix, True
        for word in paragraph.split(" "):
            if not empty and len(line) + 1 + len(word) > width:
                lines.append(line)
                line, empty = indent + word, False
            else:
                line = line + ("" if empty else " ") + word
                empty = False
        lines.append(line)
        prefix = indent
    return "\n".join(lines)


def _trim_error(msg: str) -> str:
    match = _RPC_BLOCK.search(msg)
    if match:
        return match.group(1)
    if "\nException" in msg:
        return msg.split("\nException")[0]
    return msg


def _parse_error(structured_error_msg: str) -> tuple[str, Any, Any] | None:
    """Returns ``(message, errorCode, timestamp)`` for a known schema, else None."""
    try:
        data = json.loads(structured_error_msg)
    except (TypeError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    message = data.get("message")
    if isinstance(message, dict):
        extra = message.get("extraInfo")
        ts = extra.get("timestamp") if isinstance(extra, dict) else None
        return str(message.get("message", _NOT_AVAILABLE)), message.get("errorCode"), ts
    if isinstance(message, str):
        return message, data.get("errorCode"), data.get("timestamp")
    return None


def error_summary(structured_error_msg: str) -> str:
    """Returns the last non-empty line of a structured error's message ("" for none).

    Args:
        structured_error_msg: torchelastic or flat JSON, any other text, or ``NONE``.
    """
    if not structured_error_msg or structured_error_msg == NONE:
        return ""
    parsed = _parse_error(structured_error_msg)
    message = parsed[0] if parsed is not None else structured_error_msg
    if message == _NOT_AVAILABLE:
        return ""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _format_timestamp(ts: Any) -> str:
    from datetime import datetime  # lazy: ~1 ms of every ``torchx run`` start

    try:
        return str(datetime.fromtimestamp(int(ts)))
    except (TypeError, ValueError, OverflowError, OSError):
        return _NOT_AVAILABLE


def _state_name(state: Any) -> str:
    return str(getattr(state, "name", state))


def replica_text(state: Any, structured_error_msg: str, hostname: str) -> str:
    """Formats one replica's state and error (the part after ``role[id]:``).

    Args:
        state: the replica state (an ``AppState``, or its name).
        structured_error_msg: the replica's error (JSON) or ``NONE``.
        hostname: the replica's host.
    """
    name = _state_name(state)
    if structured_error_msg == NONE:
        return f"{name} (no reply file)" if name in _NO_REPLY_STATES else name
    parsed = _parse_error(structured_error_msg)
    if parsed is None:
        return structured_error_msg
    message, code, ts = parsed
    # the block starts 4 columns in, so continuation lines move along with it
    error_msg = format_error_message(_trim_error(message), _ERROR_HEADER).replace("\n", "\n    ")
    return (
        f"{name} (exitcode: {_NOT_AVAILABLE if code is None else code})"
        f"\n        timestamp: {_format_timestamp(ts)}"
        f"\n        hostname: {hostname}"
        f"\n    {error_msg}"
    )
