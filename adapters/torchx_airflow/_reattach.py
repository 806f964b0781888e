"""Which app a try of a task instance waits for: a live one of an earlier try, or a new one.

Two records find the app of an earlier try, so that a worker killed at any moment leaves
exactly one app:

- **labels** (schedulers that support them: ``kubernetes``, ``local_docker``): every app
  carries the task instance's identity (:func:`task_labels`: DAG, task, run, map index), set
  at submission, before any handle exists; a later try finds it with
  ``torchx.runner.labels.find_apps``;
- **the task state store** (Airflow 3.3+, the fast path): ``{"app_handle", "host", "processed"}``
  under :data:`STATE_KEY`. XComs are cleared at every try, the store is not (not even by
  clearing the task: ``[state_store] clear_on_success`` is False by default).

An app is used by one finishing try only: the try that sees it end marks it processed, in the
store (``processed``, :meth:`AppSlot.mark_processed`) and, where the scheduler has labels, on
the app itself (label :data:`PROCESSED_LABEL`, ``torchx.runner.labels.set_app_labels``), so
that the label search skips it even when the store is empty (Airflow < 3.3, ``durable`` store
rows cleared, ``[state_store] clear_on_success = True``). A later try (a retry, or a cleared
task) never reuses a processed app, so clearing a succeeded task runs it again. An app whose
try died before seeing its end is taken over: waited for when live, reused when it SUCCEEDED,
replaced when it FAILED or was cancelled (:func:`decide`).

``local_cwd`` apps (no labels) live on the worker that launched them: the record names that
host (``_deferral.host_identity()``), and a try on another host cannot see the app. It logs
the handle and host and fails (a later retry may land on that host again), unless the task
says ``on_other_host="launch"``: then it launches a new app (the old one may still run there).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from torchx.specs.api import AppStatus

__all__ = [
    "ON_OTHER_HOST",
    "PROCESSED_LABEL",
    "STATE_KEY",
    "AppRecord",
    "AppSlot",
    "Decision",
    "check_on_other_host",
    "decide",
    "other_host_message",
    "task_labels",
]

STATE_KEY = "torchx_app"
_OLD_KEY = "torchx_app_handle"  # a bare handle string (before host and processed were kept)
_MAX_PROCESSED = 1000  # processed handles remembered (a label search must skip every one)
ON_OTHER_HOST = ("fail", "launch")
PROCESSED_LABEL = "airflow-processed"
"""The app label (value ``true``) of an app a try saw end: no label search finds it again."""


def check_on_other_host(value: str, task_id: str) -> str:
    """Returns ``value`` if it is an ``on_other_host`` value, else raises one clear line."""
    if value not in ON_OTHER_HOST:
        raise ValueError(
            f"TorchXOperator `{task_id}`: on_other_host must be one of"
            f" {', '.join(ON_OTHER_HOST)}, got {value!r}"
        )
    return value


class Decision(enum.StrEnum):
    """What a try does with the app an earlier try launched."""

    LAUNCH = "launch"
    REATTACH = "reattach"
    REUSE = "reuse"


def decide(status: Optional[AppStatus]) -> Decision:
    """Returns REATTACH for a live app, REUSE for a SUCCEEDED one, LAUNCH otherwise.

    Only for an app no try has seen end (not processed).

    Args:
        status: the earlier app's status (None: it vanished).
    """
    if status is None:
        return Decision.LAUNCH
    if not status.is_terminal():
        return Decision.REATTACH
    return Decision.REUSE if status.state.name == "SUCCEEDED" else Decision.LAUNCH


def task_labels(context: Mapping[str, Any]) -> dict[str, str]:
    """Returns the task instance's identity as app labels (empty without a task instance)."""
    ti = context.get("ti")
    if ti is None:
        return {}
    map_index = getattr(ti, "map_index", -1)
    return {
        "airflow-dag-id": str(ti.dag_id),
        "airflow-task-id": str(ti.task_id),
        "airflow-run-id": str(ti.run_id),
        "airflow-map-index": str(-1 if map_index is None else map_index),
    }


class AppRecord:
    """The stored record: the current handle, where it was launched, the processed handles."""

    def __init__(
        self, app_handle: str = "", host: str = "", processed: Optional[list[str]] = None
    ) -> None:
        self.app_handle = app_handle
        self.host = host
        self.processed = list(processed or [])

    @classmethod
    def load(cls, value: Any) -> AppRecord:
        """Reads a stored value (a dict, an old bare handle, or nothing)."""
        if isinstance(value, str):
            return cls(value)
        if not isinstance(value, Mapping):
            return cls()
        processed = value.get("processed")
        return cls(
            str(value.get("app_handle") or ""),
            str(value.get("host") or ""),
            [str(h) for h in processed] if isinstance(processed, list) else [],
        )

    def dump(self) -> dict[str, Any]:
        """Returns the JSON value to store."""
        return {
            "app_handle": self.app_handle,
            "host": self.host,
            "processed": self.processed[-_MAX_PROCESSED:],
        }

    def pending(self) -> Optional[str]:
        """The handle an earlier try launched and did not see end, if any."""
        if self.app_handle and self.app_handle not in self.processed:
            return self.app_handle
        return None


class AppSlot:
    """The task instance's durable app record (a no-op without a task state store).

    Args:
        store: ``context["task_state_store"]`` or None (Airflow < 3.3, or ``durable=False``).
        log: where to say that re-attach is unavailable.
        first_try: the task instance's first try: no earlier try can have stored a record
            (a cleared or retried task instance has a higher try number), so :meth:`get`
            does not ask the store (one API round trip less per task).
    """

    def __init__(self, store: Any, log: logging.Logger | Any, first_try: bool = False) -> None:
        self._store = store
        self.first_try = first_try
        self._record: Optional[AppRecord] = None
        self.written = False
        if store is None:
            log.info("no task_state_store: a retry of this task launches a new app")

    @property
    def available(self) -> bool:
        """Whether there is a store to keep the record in."""
        return self._store is not None

    def get(self) -> AppRecord:
        """Returns what earlier tries stored (an empty record on the first try)."""
        if self._record is None:
            value = None
            if self._store is not None and not self.first_try:
                value = self._store.get(STATE_KEY)
                if value is None:
                    value = self._store.get(_OLD_KEY)
            self._record = AppRecord.load(value)
        return self._record

    def set(self, app_handle: str, host: str = "") -> None:
        """Stores ``app_handle`` (launched on ``host``) for the next tries of this instance."""
        if self._store is None:
            return
        record = self.get()
        record.app_handle, record.host = app_handle, host
        self._write(record)

    def mark_processed(self, app_handle: str) -> None:
        """Records that a try saw ``app_handle`` end: no later try reuses it."""
        if self._store is None:
            return
        record = self.get()
        if app_handle not in record.processed:
            record.processed.append(app_handle)
        self._write(record)

    def _write(self, record: AppRecord) -> None:
        self._store.set(STATE_KEY, record.dump())
        self.written = True


def other_host_message(app_handle: str, host: str, here: str) -> str:
    """Why a try on ``here`` neither follows nor replaces the host-local app of ``host``."""
    return (
        f"the app of an earlier try, {app_handle}, was launched on another host"
        f" ({host.partition('/')[0]}; this try runs on {here.partition('/')[0]}), which alone"
        " can follow or cancel it: failing instead of launching a duplicate (a retry on that"
        ' host re-attaches; on_other_host="launch" launches a new app instead)'
    )
