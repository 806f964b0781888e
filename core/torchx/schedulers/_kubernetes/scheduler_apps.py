"""Read-side methods of ``KubernetesScheduler`` shared by both modes: logs, list, labels.

A mixin: the scheduler provides ``_api_client``, ``_modes``, ``_mode``, ``_mode_of``,
``describe`` and ``_get_active_context``.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Optional

from torchx.schedulers._kubernetes._opts import MODE_VOLCANO
from torchx.schedulers._kubernetes.client import api_server_errors
from torchx.schedulers._kubernetes.logs import replica_log
from torchx.schedulers._kubernetes.names import split_app_id
from torchx.schedulers.api import ListAppResponse, Stream
from torchx.schedulers.labels import LabelledApp, app_labels
from torchx.specs.api import CfgVal

if TYPE_CHECKING:
    from datetime import datetime

    from torchx.schedulers._kubernetes.modes import Mode
    from torchx.schedulers.api import DescribeAppResponse

__all__ = ["AppQueries"]


class AppQueries:
    """``log_iter``, ``list``, ``list_by_labels`` and ``set_app_labels`` over every mode."""

    if TYPE_CHECKING:

        def _api_client(self) -> Any: ...

        def _modes(self, app_id: str = "") -> builtins.list[Mode]: ...

        def _mode(self, name: str) -> Mode: ...

        def _mode_of(self, namespace: str, name: str, doing: str) -> Optional[Mode]: ...

        def describe(self, app_id: str) -> Optional[DescribeAppResponse]: ...

        def _get_active_context(self) -> dict[str, Any]: ...

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: Optional[str] = None,
        since: Optional[datetime] = None,
        until: Optional[datetime] = None,
        should_tail: bool = False,
        streams: Optional[Stream] = None,
    ) -> Iterable[str]:
        """Lines of replica ``k``'s log, each with its newline (see ``_kubernetes.logs``).

        Raises:
            ValueError: a stream other than COMBINED, or (plain mode) no such replica.
        """
        namespace, name = split_app_id(app_id)
        # an app no mode has is read as TorchX did: the Volcano pod's log
        mode = self._mode_of(namespace, name, f"reading the log of {app_id}")
        return replica_log(
            mode or self._mode(MODE_VOLCANO),
            namespace,
            name,
            role_name,
            k,
            regex,
            since,
            until,
            should_tail,
            streams,
        )

    def list(self, cfg: Optional[Mapping[str, CfgVal]] = None) -> builtins.list[ListAppResponse]:
        """The apps of a namespace: ``cfg["namespace"]``, else the kube context's, else default."""
        namespace = str((cfg or {}).get("namespace") or "") or self._context_namespace()
        apps: builtins.list[ListAppResponse] = []
        with api_server_errors(self._api_client(), f"listing apps in namespace {namespace}"):
            for mode in self._modes():
                apps.extend(mode.list(namespace))
        return apps

    def list_by_labels(
        self, labels: Mapping[str, str], cfg: Optional[Mapping[str, CfgVal]] = None
    ) -> builtins.list[LabelledApp]:
        """The apps of a namespace whose Jobs (plain Jobs, Volcano Job) carry ``labels``.

        One label-selected list per mode, then each app found is described. The namespace is
        ``cfg["namespace"]``, else the kube context's, else ``default``.
        """
        namespace = str((cfg or {}).get("namespace") or "") or self._context_namespace()
        with api_server_errors(self._api_client(), f"finding apps in namespace {namespace}"):
            names = [n for m in self._modes() for n in m.names_by_labels(namespace, dict(labels))]
        found: builtins.list[LabelledApp] = []
        for name in dict.fromkeys(names):
            desc = self.describe(f"{namespace}:{name}")
            if desc is not None:
                found.append(LabelledApp(desc.app_id, desc.state, app_labels(desc.metadata)))
        return found

    def set_app_labels(self, app_id: str, labels: Mapping[str, str]) -> None:
        """Patch ``labels`` onto the app's Jobs (plain mode) or its Volcano Job.

        Raises:
            ValueError: no mode has the app.
        """
        namespace, name = split_app_id(app_id)
        with api_server_errors(self._api_client(), f"labelling {app_id}"):
            if not any(m.set_labels(namespace, name, dict(labels)) for m in self._modes()):
                raise ValueError(f"kubernetes app `{app_id}` does not exist")

    def _context_namespace(self) -> str:
        try:
            context = self._get_active_context()
        except Exception:  # no kubeconfig (e.g. in-cluster): the default namespace
            return "default"
        return str((context.get("context") or {}).get("namespace") or "default")
