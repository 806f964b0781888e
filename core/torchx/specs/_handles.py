"""App handles ``scheduler://session/app_id`` (re-exported from :mod:`torchx.specs.api`)."""

from __future__ import annotations

import re
from typing import NamedTuple

from torchx.specs._errors import MalformedAppHandleException

__all__ = [
    "AppHandle",
    "ParsedAppHandle",
    "parse_app_handle",
    "make_app_handle",
]

AppHandle = str
"""An app handle: ``{scheduler_backend}://{session_name}/{app_id}``."""

_HANDLE_RE = re.compile(r"(?P<scheduler_backend>.+)://(?P<session_name>.*)/(?P<app_id>.+)")


class ParsedAppHandle(NamedTuple):
    """The parts of an app handle."""

    scheduler_backend: str
    session_name: str
    app_id: str


def parse_app_handle(app_handle: AppHandle) -> ParsedAppHandle:
    """Parses ``{scheduler_backend}://{session_name}/{app_id}``.

    The session may be empty (``k8s:///foo``); everything before the last ``/``
    goes into the session.

    Args:
        app_handle: the handle to parse.

    Returns:
        The parsed handle.

    Raises:
        MalformedAppHandleException: if the handle does not match the form.
    """
    match = _HANDLE_RE.fullmatch(app_handle)
    if match is None:
        raise MalformedAppHandleException(app_handle)
    return ParsedAppHandle(**match.groupdict())


def make_app_handle(scheduler_backend: str, session_name: str, app_id: str) -> AppHandle:
    """Formats an app handle.

    Args:
        scheduler_backend: the scheduler name (e.g. ``local_cwd``).
        session_name: the runner's session name.
        app_id: the scheduler-assigned app id.

    Returns:
        ``{scheduler_backend}://{session_name}/{app_id}``.
    """
    return f"{scheduler_backend}://{session_name}/{app_id}"
