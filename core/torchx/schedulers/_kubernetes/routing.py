"""Which mode has an app: ``KubernetesScheduler``'s mode routing, with a memo of app -> mode.

An app id (``{namespace}:{name}``) does not say its mode, so an app never seen is found by
asking every mode in turn (volcano first: a ``GET`` of its Volcano Job, then a list of plain
Jobs, then the JobSet). An app's objects never change mode, so once ``schedule`` created it or
a look found it, the scheduler asks that mode alone: ``describe`` and ``wait_for_change`` of an
app being waited for make no probe of the other modes (two API requests fewer per status check
and per wait). A mode that no longer finds the app (deleted) makes the scheduler forget it and
ask every mode again. A mixin: the scheduler provides ``_api_client`` and ``_plain_timing``.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Optional

from torchx.schedulers._kubernetes._opts import MODE_JOBSET, MODE_PLAIN, MODE_VOLCANO
from torchx.schedulers._kubernetes.client import api_server_errors
from torchx.schedulers._kubernetes.jobset_ops import JobSetOps
from torchx.schedulers._kubernetes.plain_ops import PlainOps
from torchx.schedulers._kubernetes.volcano_ops import VolcanoOps

if TYPE_CHECKING:
    from torchx.schedulers._kubernetes.modes import Mode
    from torchx.schedulers._kubernetes.plain_submit import SubmitTiming

__all__ = ["MAX_KNOWN_APPS", "ModeRouting"]

MAX_KNOWN_APPS = 1024
"""Apps whose mode a scheduler remembers (past this it forgets them all: a probe re-learns)."""


class ModeRouting:
    """``_modes``, ``_mode``, ``_mode_of`` and the app -> mode memo (see the module docstring)."""

    _api_client: Callable[[], Any]
    _plain_timing: SubmitTiming
    _app_modes: dict[str, Mode]

    def _modes(self, app_id: str = "") -> builtins.list[Mode]:
        """Every mode, volcano first; only the mode known to have ``app_id`` if one is."""
        known = self._known_modes().get(app_id)
        if known is not None:
            return [known]
        return [self._mode(MODE_VOLCANO), self._plain(), self._mode(MODE_JOBSET)]

    def _mode(self, name: str) -> Mode:
        """The mode the ``mode`` run option names."""
        if name == MODE_JOBSET:
            return JobSetOps(self._api_client)
        return self._plain() if name == MODE_PLAIN else VolcanoOps(self._api_client)

    def _plain(self) -> PlainOps:
        return PlainOps(self._api_client, timing=self._plain_timing)

    def _known_modes(self) -> dict[str, Mode]:
        if not hasattr(self, "_app_modes"):
            self._app_modes = {}
        return self._app_modes

    def _found(self, app_id: str, mode: Optional[Mode]) -> Optional[Mode]:
        """Remembers that ``mode`` has ``app_id`` (None: forgets the app); returns ``mode``."""
        known = self._known_modes()
        if mode is None:
            known.pop(app_id, None)
            return None
        if len(known) >= MAX_KNOWN_APPS:  # a long-lived process (a triggerer)
            known.clear()
        known[app_id] = mode
        return mode

    def _forget_modes(self) -> None:
        """Forgets every app (their modes' API objects hold the client being closed)."""
        self._known_modes().clear()

    def _mode_of(self, namespace: str, name: str, doing: str) -> Optional[Mode]:
        """The mode that has the app, or None (a known app's mode without a probe)."""
        app_id = f"{namespace}:{name}"
        with api_server_errors(self._api_client(), doing):
            modes = self._modes(app_id)
            if len(modes) == 1:  # known: the mode's own reads say when the app is gone
                return modes[0]
            return self._found(app_id, next((m for m in modes if m.has_app(namespace, name)), None))
