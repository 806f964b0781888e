"""The torchx session id of this process (shared with jobs through an environment variable)."""

from __future__ import annotations

import os
import uuid
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


def get_session_id_or_create_new() -> str:
    """Returns this process's session id, creating it on first use.

    It is ``$TORCHX_INTERNAL_SESSION_ID`` when set (a job inherits its launcher's session),
    otherwise a new uuid4; it stays the same for the life of the process.
    """
    global CURRENT_SESSION_ID
    if not CURRENT_SESSION_ID:
        CURRENT_SESSION_ID = os.environ.get(TORCHX_INTERNAL_SESSION_ID) or str(uuid.uuid4())
    return CURRENT_SESSION_ID


def get_torchx_session_id() -> Optional[str]:
    """Returns the session id if one was read or created already, else None."""
    return CURRENT_SESSION_ID
