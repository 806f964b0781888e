"""The interface each kubernetes mode implements (volcano: ``VolcanoOps``, plain: ``PlainOps``).

The scheduler does everything through it: the dry run (``build``, then ``validate`` with
``validate_spec``) and ``schedule`` (``create``) go to the mode the ``mode`` run option names;
an app id (``{namespace}:{name}``) does not say its mode, so ``describe``, cancel, delete and
``list`` ask every mode in turn, and logs, ``wait_for_change`` and ``enforce_fail_fast`` go to
the mode that has the app (``has_app``).

A mode object is cheap and takes a getter for the ``ApiClient``: ``build`` never calls it, so a
dry run without ``validate_spec`` loads no cluster configuration.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any, Optional, Protocol

from torchx.schedulers._kubernetes.replicas import Replica
from torchx.schedulers._kubernetes.request import KubernetesJob
from torchx.schedulers._kubernetes.settings import Settings
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse
from torchx.specs.api import AppDef

__all__ = ["Mode", "PodFactory"]

PodFactory = Callable[[str, Replica], Any]
"""``(app_id, replica) -> V1Pod`` with labels, pod settings and overlay (the scheduler's)."""


class Mode(Protocol):
    """One kubernetes mode: its request, and its operations on the API server."""

    def build(self, app: AppDef, app_id: str, settings: Settings, pod: PodFactory) -> KubernetesJob:
        """The request for ``app`` named ``app_id`` (pure: no cluster access).

        Raises:
            ValueError: the app cannot be expressed in this mode (names the fix).
        """

    def validate(self, namespace: str, request: KubernetesJob) -> None:
        """Server-side dry-run create of the request (nothing is stored).

        Raises:
            ValueError: the API server rejected it (its reason).
        """

    def create(self, namespace: str, request: KubernetesJob) -> str:
        """Create the request's objects; return the app name (``name`` of the app id).

        Raises:
            ValueError: an app of that name exists, or the API server rejected the request.
        """

    def has_app(self, namespace: str, name: str) -> bool:
        """Whether this mode has an app ``name`` in ``namespace``."""

    def describe(self, namespace: str, name: str) -> Optional[DescribeAppResponse]:
        """Describe the app (a read only), or None if this mode has no such app."""

    def abort(self, namespace: str, name: str) -> None:
        """Stop the app, keeping its objects for inspection where the mode can."""

    def delete(self, namespace: str, name: str) -> None:
        """Delete every object of the app."""

    def list(self, namespace: str) -> builtins.list[ListAppResponse]:
        """The mode's apps in ``namespace``."""

    def names_by_labels(self, namespace: str, labels: dict[str, str]) -> builtins.list[str]:
        """The names of this mode's apps in ``namespace`` carrying ``labels`` (full keys)."""

    def set_labels(self, namespace: str, name: str, labels: dict[str, str]) -> bool:
        """Add ``labels`` to the app's objects (where ``names_by_labels`` looks); False if none."""

    def log_pod(self, namespace: str, name: str, role: str, k: int, wait: float) -> Optional[str]:
        """The pod whose log is replica ``k`` of ``role``, or None if it has no log (yet).

        Args:
            namespace: the app's namespace.
            name: the app name.
            role: the role name.
            k: the replica id.
            wait: seconds to wait for the replica's container to start (0: do not wait).

        Raises:
            ValueError: the app has no such replica (where the mode can tell).
        """

    def read_log(self) -> Callable[..., Any]:
        """``CoreV1Api.read_namespaced_pod_log`` of this mode's client."""

    def wait_for_change(self, namespace: str, name: str, timeout: float) -> None:
        """Block until the app may have changed, or ``timeout`` seconds pass."""

    def enforce_fail_fast(self, namespace: str, name: str) -> None:
        """Stop the replicas still running in an app that FAILED (no-op if the mode need not)."""
