"""App handles and ``AppDryRunInfo`` (re-exported from :mod:`torchx.specs.api`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Generic, NamedTuple, TypeVar

from torchx.specs._errors import MalformedAppHandleException
from torchx.specs._role import AppDef

__all__ = [
    "AppHandle",
    "ParsedAppHandle",
    "parse_app_handle",
    "make_app_handle",
    "AppDryRunInfo",
]

AppHandle = str
"""An app handle: ``{scheduler_backend}://{session_name}/{app_id}``."""

T = TypeVar("T")

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


class AppDryRunInfo(Generic[T]):
    """The raw scheduler request for an app, as built by ``submit_dryrun``.

    Args:
        request: the scheduler-specific request object.
        fmt: formats the request for ``repr()``.
    """

    def __init__(self, request: T, fmt: Callable[[T], str]) -> None:
        self.request = request
        self._fmt = fmt
        # back-references set by the runner and the scheduler
        self._app: AppDef | None = None
        self._cfg: Mapping[str, Any] | None = None
        self._scheduler: str | None = None

    @property
    def app(self) -> AppDef | None:
        """The AppDef this request was built from, or None."""
        return self._app

    @property
    def cfg(self) -> Mapping[str, Any]:
        """A read-only view of the resolved run config."""
        return MappingProxyType(dict(self._cfg or {}))

    def __repr__(self) -> str:
        return self._fmt(self.request)
