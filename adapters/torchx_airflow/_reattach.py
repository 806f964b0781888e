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

**Ownership.** The try that follows an app owns it: its try number is the app's
:data:`OWNER_LABEL` (set at launch, or by :func:`torchx.runner.labels.set_app_labels` when a
later try re-attaches, before it follows) and the record's ``owner``. A try cancels an app on
``on_kill`` or a failure only while no later try owns it (``_manager``), so a superseded try
SIGTERMed after its successor re-attached leaves the app to the successor.

**Placement.** Apps of ``local_cwd`` (a host) and ``local_docker`` (an engine) can be followed
only from where they were launched: the record keeps ``torchx.runner.labels.placement``
(``host:<hostname>/<boot id>``, ``docker:<engine id>``). A try elsewhere (:func:`compare`):
the same host after a reboot (another boot id) means the app is gone: a new app is launched;
another host or engine: the try logs the handle and place and fails (a later retry may land
there and re-attach), at most :data:`MAX_REFUSALS` times per app; after that, or with
``on_other_host="launch"``, it launches a new app (the old one may still run there). So a host
that is gone for good costs at most two tries, never a permanent failure.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from torchx.specs.api import AppStatus

__all__ = [
    "MAX_REFUSALS",
    "ON_OTHER_HOST",
    "OWNER_LABEL",
    "PROCESSED_LABEL",
    "STATE_KEY",
    "AppRecord",
    "AppSlot",
    "Decision",
    "check_on_other_host",
    "compare",
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
OWNER_LABEL = "airflow-owner-try"
"""The app label holding the try number of the try that follows (owns) the app."""
MAX_REFUSALS = 2
"""Tries that fail because the app of an earlier try runs on another host or engine."""


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
    if ti is None or not all(hasattr(ti, k) for k in ("dag_id", "task_id", "run_id")):
        return {}
    map_index = getattr(ti, "map_index", -1)
    return {
        "airflow-dag-id": str(ti.dag_id),
        "airflow-task-id": str(ti.task_id),
        "airflow-run-id": str(ti.run_id),
        "airflow-map-index": str(-1 if map_index is None else map_index),
    }


class AppRecord:
    """The stored record: the current handle, where it lives, its owner, the processed handles.

    ``host`` is the app's placement (``""``: reachable from anywhere), ``owner`` the try number
    of the try that follows it (0: unknown), ``refusals`` how many tries failed because it
    runs elsewhere.
    """

    def __init__(
        self,
        app_handle: str = "",
        host: str = "",
        processed: Optional[list[str]] = None,
        owner: int = 0,
        refusals: int = 0,
    ) -> None:
        self.app_handle = app_handle
        self.host = host
        self.processed = list(processed or [])
        self.owner = owner
        self.refusals = refusals

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
            _int(value.get("owner")),
            _int(value.get("refusals")),
        )

    def dump(self) -> dict[str, Any]:
        """Returns the JSON value to store."""
        return {
            "app_handle": self.app_handle,
            "host": self.host,
            "processed": self.processed[-_MAX_PROCESSED:],
            "owner": self.owner,
            "refusals": self.refusals,
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

    def set(self, app_handle: str, host: str = "", owner: int = 0) -> None:
        """Stores ``app_handle`` (placed at ``host``, followed by try ``owner``) for later tries."""
        if self._store is None:
            return
        record = self.get()
        if record.app_handle != app_handle:
            record.refusals = 0
        record.app_handle, record.host, record.owner = app_handle, host, owner
        self._write(record)

    def refuse(self) -> int:
        """Counts one more try that could not reach the recorded app; returns the count."""
        record = self.get()
        record.refusals += 1
        if self._store is not None:
            self._write(record)
        return record.refusals

    def owner_now(self, app_handle: str) -> int:
        """The owner try the store holds for ``app_handle`` now (read again; 0: unknown)."""
        if self._store is None:
            return 0
        record = AppRecord.load(self._store.get(STATE_KEY))
        return record.owner if record.app_handle == app_handle else 0

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


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _normal(place: str) -> str:
    """A placement in today's form (records before it held ``hostname/boot id/pid ns``)."""
    if not place or ":" in place.partition("/")[0]:
        return place
    host, _, rest = place.partition("/")
    return f"host:{host}/{rest.partition('/')[0]}"


def compare(recorded: str, here: str) -> str:
    """``same``, ``rebooted`` (same host, another boot: its apps are gone) or ``elsewhere``."""
    recorded, here = _normal(recorded), _normal(here)
    if not recorded or recorded == here:
        return "same"
    same_host = recorded.partition("/")[0] == here.partition("/")[0]
    if recorded.startswith("host:") and here.startswith("host:") and same_host:
        return "rebooted"
    return "elsewhere"


def _where(place: str) -> str:
    place = _normal(place)
    kind, _, rest = place.partition(":")
    return f"host {rest.partition('/')[0]}" if kind == "host" else f"Docker engine {rest[:12]}"


def other_host_message(app_handle: str, host: str, here: str) -> str:
    """Why a try at ``here`` neither follows nor replaces the app placed at ``host``."""
    return (
        f"the app of an earlier try, {app_handle}, was launched on another {_where(host)}"
        f" (this try runs on {_where(here)}), which alone can follow or cancel it: failing"
        " instead of launching a duplicate (a retry there re-attaches; after"
        f' {MAX_REFUSALS} such failures, or with on_other_host="launch", a try launches a'
        " new app)"
    )
