"""What each kubernetes mode provides to the scheduler once an app exists on the cluster."""

from __future__ import annotations

import builtins
from typing import Optional, Protocol

from torchx.schedulers.api import DescribeAppResponse, ListAppResponse

__all__ = ["ModeOps"]


class ModeOps(Protocol):
    """Cluster operations of one mode (``VolcanoOps``; plain mode provides its own).

    ``describe`` returns None when the app is not one of this mode's, so the scheduler can ask
    each mode in turn for an app id (``{namespace}:{name}``) that does not say its mode.
    """

    def describe(self, namespace: str, name: str) -> Optional[DescribeAppResponse]:
        """Describe the app, or None if this mode has no such app."""

    def abort(self, namespace: str, name: str) -> None:
        """Stop the app, keeping its objects for inspection where the mode can."""

    def delete(self, namespace: str, name: str) -> None:
        """Delete every object of the app."""

    def list(self, namespace: str) -> builtins.list[ListAppResponse]:
        """The mode's apps in ``namespace``."""
