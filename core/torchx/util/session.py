"""The torchx session id of this process (shared with jobs through an environment variable)."""

from __future__ import annotations

import os
from typing import Optional

from torchx import settings

__all__ = [
    "CURRENT_SESSION_ID",
    "TORCHX_INTERNAL_SESSION_ID",
    "get_session_id_or_create_new",
    "get_torchx_session_id",
]

TORCHX_INTERNAL_SESSION_ID: str = settings.ENV_TORCHX_INTERNAL_SESSION_ID
"""Alias of ``torchx.settings.ENV_TORCHX_INTERNAL_SESSION_ID``."""

CURRENT_SESSION_ID: Optional[str] = None
"""The session id once it was read or created (None before)."""


_created: Optional[str] = None  # the uuid this process made up, reused while the env is unset


def get_session_id_or_create_new() -> str:
    """Returns this process's session id (the one ``torchx.runner.events`` records).

    ``$TORCHX_INTERNAL_SESSION_ID`` wins whenever it is set (a job inherits its launcher's
    session); otherwise a uuid4 is created once and kept for the life of the process.
    """
    global CURRENT_SESSION_ID, _created
    session_id = os.environ.get(TORCHX_INTERNAL_SESSION_ID)
    if not session_id:
        if _created is None:
            _created = _uuid4()
        session_id = _created
    CURRENT_SESSION_ID = session_id
    return session_id


def _uuid4() -> str:
    """``str(uuid.uuid4())`` without importing ``uuid`` (which imports ``platform``)."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40  # version 4
    b[8] = (b[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def get_torchx_session_id() -> Optional[str]:
    """Returns the session id if one was read or created already, else None."""
    return CURRENT_SESSION_ID
