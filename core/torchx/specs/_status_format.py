"""Human-readable formatting of ``AppStatus`` (what ``torchx status`` prints)."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from torchx.specs._constants import NONE

if TYPE_CHECKING:
    from torchx.specs._state import AppStatus, ReplicaStatus, RoleStatus

__all__ = ["error_summary", "format_app_status", "format_error_message"]

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
    try:
        return str(datetime.fromtimestamp(int(ts)))
    except (TypeError, ValueError, OverflowError, OSError):
        return _NOT_AVAILABLE


def _state_name(state: Any) -> str:
    return str(getattr(state, "name", state))


def _replica_data(replica: ReplicaStatus) -> str:
    state = _state_name(replica.state)
    if replica.structured_error_msg == NONE:
        return f"{state} (no reply file)" if state in _NO_REPLY_STATES else state
    parsed = _parse_error(replica.structured_error_msg)
    if parsed is None:
        return replica.structured_error_msg
    message, code, ts = parsed
    # the block starts 4 columns in, so continuation lines move along with it
    error_msg = format_error_message(_trim_error(message), _ERROR_HEADER).replace("\n", "\n    ")
    return (
        f"{state} (exitcode: {_NOT_AVAILABLE if code is None else code})"
        f"\n        timestamp: {_format_timestamp(ts)}"
        f"\n        hostname: {replica.hostname}"
        f"\n    {error_msg}"
    )


def _format_role(role: RoleStatus) -> str:
    out = []
    for replica in sorted(role.replicas, key=lambda r: r.id):
        mark = "*" if replica.id == 0 else " "
        out.append(f"\n {mark}{role.role}[{replica.id}]:{_replica_data(replica)}")
    return "".join(out)


def format_app_status(status: AppStatus, roles: list[RoleStatus]) -> str:
    """Formats an app status with the given (already filtered) roles.

    Args:
        status: the status to format.
        roles: the role statuses to include.

    Returns:
        The ``AppStatus:`` text block, ending with a newline and four spaces.
    """
    roles_text = "".join(_format_role(r) for r in roles)
    return (
        "AppStatus:\n"
        f"    State: {status.state}\n"
        f"    Num Restarts: {status.num_restarts}\n"
        f"    Roles: {roles_text}\n"
        f"    Msg: {status.msg}\n"
        f"    Structured Error Msg: {status.structured_error_msg}\n"
        f"    UI URL: {status.ui_url}\n"
        "    "
    )
