"""What the engine holds of a ``local_docker`` app: its containers and its marker volumes.

Containers carry the app's labels from creation and cannot change them, so what happens later
lives on small labelled volumes, *markers*: ``torchx-cancelled-{app}`` (the app was cancelled:
it stays CANCELLED) and one ``torchx-label-{app}-{key hash}`` per label added after launch.
These functions read and write them through a ``DockerEngine`` (no ``docker`` import here).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from torchx.schedulers._docker._partial import (
    LABEL_ROLE_REPLICAS,
    LABEL_SUBMITTED_AT,
    LABEL_SUBMITTER,
)
from torchx.schedulers._docker._request import (
    LABEL_APP_ID,
    LABEL_APP_NAME,
    LABEL_MAX_RETRIES,
    LABEL_REPLICA_ID,
    LABEL_ROLE_INDEX,
    LABEL_ROLE_NAME,
    LABEL_SESSION,
)
from torchx.schedulers._docker._state import ContainerInfo, app_state, container_state
from torchx.schedulers.api import ListAppResponse
from torchx.schedulers.labels import LabelledApp, app_labels, matches

if TYPE_CHECKING:
    from torchx.schedulers._docker._client import DockerEngine

__all__ = [
    "LABEL_CANCELLED",
    "LABEL_LABELS_OF",
    "add_labels",
    "container_infos",
    "is_cancelled",
    "labelled_apps",
    "mark_cancelled",
    "marks",
    "session_apps",
]

LABEL_CANCELLED = "torchx.pytorch.org/cancelled"
LABEL_LABELS_OF = "torchx.pytorch.org/labels-of"


def container_infos(engine: DockerEngine, app_id: str) -> list[tuple[str, ContainerInfo]]:
    """``(container id, info)`` of the app's containers, by role index then replica id."""
    infos = []
    for r in engine.containers(f"{LABEL_APP_ID}={app_id}"):
        labels = r["labels"]
        info = ContainerInfo(
            name=r["name"],
            status=r["status"],
            exit_code=r["exit_code"],
            role=labels.get(LABEL_ROLE_NAME, ""),
            role_index=int(labels.get(LABEL_ROLE_INDEX, 0)),
            replica_id=int(labels.get(LABEL_REPLICA_ID, 0)),
            session=labels.get(LABEL_SESSION, ""),
            retries=int(labels.get(LABEL_MAX_RETRIES, 0)),
            labels=tuple(sorted(app_labels(labels).items())),
            role_replicas=labels.get(LABEL_ROLE_REPLICAS, ""),
            submitter=labels.get(LABEL_SUBMITTER, ""),
            submitted_at=_float(labels.get(LABEL_SUBMITTED_AT, "")),
        )
        infos.append((r["id"], info))
    infos.sort(key=lambda t: (t[1].role_index, t[1].replica_id))
    return infos


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def is_cancelled(engine: DockerEngine, app_id: str) -> bool:
    """Whether the app carries a cancelled marker."""
    return bool(engine.markers(f"{LABEL_CANCELLED}={app_id}"))


def mark_cancelled(engine: DockerEngine, app_id: str, session: str) -> None:
    """Leaves the app's cancelled marker (once)."""
    if not is_cancelled(engine, app_id):
        engine.create_marker(
            f"torchx-cancelled-{app_id}",
            {LABEL_CANCELLED: app_id, LABEL_APP_ID: app_id, LABEL_SESSION: session},
        )


def marks(engine: DockerEngine, label: str) -> tuple[set[str], dict[str, dict[str, str]]]:
    """The cancelled app ids and the added labels (by app id) of the markers with ``label``."""
    cancelled: set[str] = set()
    added: dict[str, dict[str, str]] = {}
    for marker in engine.markers(label):
        if LABEL_CANCELLED in marker:
            cancelled.add(marker[LABEL_CANCELLED])
        if LABEL_LABELS_OF in marker:
            added.setdefault(marker[LABEL_LABELS_OF], {}).update(app_labels(marker))
    return cancelled, added


def labelled_apps(engine: DockerEngine, labels: Mapping[str, str]) -> list[LabelledApp]:
    """The apps (of any session) carrying ``labels`` (full keys), added ones included.

    One engine call for the markers, one for the containers with the first label; an app
    that has the first label only as an added one costs one more.
    """
    if not labels:
        return []
    key, value = next(iter(labels.items()))
    cancelled, added = marks(engine, LABEL_APP_ID)
    apps: dict[str, list[dict[str, Any]]] = {}
    for r in reversed(engine.containers(f"{key}={value}")):
        apps.setdefault(r["labels"].get(LABEL_APP_ID, ""), []).append(r)
    for app_id, extra in added.items():
        if extra.get(key) == value and app_id not in apps:
            rows = engine.containers(f"{LABEL_APP_ID}={app_id}")
            if rows:
                apps[app_id] = list(reversed(rows))
    found = []
    for app_id, rs in apps.items():
        merged = {**app_labels(rs[0]["labels"]), **added.get(app_id, {})}
        if matches(merged, labels):
            states = [container_state(r["status"], r["exit_code"]) for r in rs]
            state = app_state(states, cancelled=app_id in cancelled)
            found.append(LabelledApp(app_id=app_id, state=state, labels=merged))
    return found


def add_labels(engine: DockerEngine, app_id: str, session: str, labels: Mapping[str, str]) -> None:
    """Adds labels to the app: one marker volume per key (a new value replaces the old)."""
    for key, value in labels.items():
        engine.remove_markers([f"{LABEL_LABELS_OF}={app_id}", key])
        digest = hashlib.sha1(key.encode()).hexdigest()[:10]
        engine.create_marker(
            f"torchx-label-{app_id}-{digest}",
            {LABEL_LABELS_OF: app_id, LABEL_APP_ID: app_id, LABEL_SESSION: session, key: value},
        )


def session_apps(engine: DockerEngine, session: str) -> list[ListAppResponse]:
    """Lists a session's apps, in container creation order (``DockerScheduler.list``)."""
    rows = engine.containers(f"{LABEL_SESSION}={session}")
    cancelled, _ = marks(engine, f"{LABEL_SESSION}={session}")
    apps: dict[str, list[dict[str, Any]]] = {}
    for r in reversed(rows):  # the engine lists the newest first
        apps.setdefault(r["labels"].get(LABEL_APP_ID, ""), []).append(r)
    return [
        ListAppResponse(
            app_id=app_id,
            state=app_state(
                [container_state(r["status"], r["exit_code"]) for r in rs],
                cancelled=app_id in cancelled,
            ),
            app_handle=f"local_docker://{session}/{app_id}",
            name=rs[0]["labels"].get(LABEL_APP_NAME, ""),
        )
        for app_id, rs in apps.items()
    ]
