"""Find the apps of a scheduler by their labels (see :mod:`torchx.schedulers.labels`).

An orchestrator that launches with ``LaunchRequest(labels={...})`` finds its app again from
any process, even when it died before it could record the handle::

    from torchx.runner import get_runner
    from torchx.runner.labels import find_apps, supports_labels

    with get_runner() as runner:
        if supports_labels(runner, "kubernetes"):
            for found in find_apps(runner, "kubernetes", {"task": "train", "run": "r1"}):
                print(found.app_handle, found.state, found.labels)

A scheduler with ``list_by_labels(labels, cfg)`` filters on the backend (a Kubernetes label
selector, a Docker label filter); any other scheduler that supports labels is listed and each
app described.

Labels can be added to an app after launch (:func:`set_app_labels`), e.g. to mark an app an
orchestrator is done with, and :func:`find_apps` can skip the apps carrying a key
(``without=``)::

    set_app_labels(runner, handle, {"processed": "true"})
    find_apps(runner, "kubernetes", {"task": "train"}, without=["processed"])  # not that one

Before re-attaching to an app found this way, compare :func:`placement` with the one recorded
at launch: a ``local_cwd`` app can be followed only from its host, a ``local_docker`` app only
through its engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Optional

from torchx.schedulers.labels import (
    LABEL_PREFIX,
    app_labels,
    check_label_key,
    label_value,
    labels_metadata,
    matches,
)

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.specs.api import AppState, CfgVal

__all__ = [
    "LABEL_PREFIX",
    "FoundApp",
    "check_label_key",
    "find_apps",
    "label_value",
    "labels_metadata",
    "placement",
    "set_app_labels",
    "supports_labels",
]


@dataclasses.dataclass(frozen=True)
class FoundApp:
    """An app whose labels matched.

    Args:
        app_handle: ``scheduler://session/app_id``.
        state: its state when found.
        labels: all of its labels, keys without :data:`LABEL_PREFIX`.
    """

    app_handle: str
    state: AppState
    labels: Mapping[str, str]


def supports_labels(runner: Runner, scheduler: str) -> bool:
    """Whether ``scheduler``'s apps carry labels (``supports_app_labels`` on the scheduler)."""
    return bool(getattr(runner._scheduler(scheduler), "supports_app_labels", False))


def find_apps(
    runner: Runner,
    scheduler: str,
    labels: Mapping[str, object],
    cfg: Optional[Mapping[str, CfgVal]] = None,
    without: Iterable[str] = (),
) -> list[FoundApp]:
    """Returns the apps of ``scheduler`` that carry every one of ``labels``.

    Args:
        runner: the runner (its session scopes the schedulers that list per session).
        scheduler: the scheduler name.
        labels: ``{key: value}`` as given to ``LaunchRequest(labels=...)`` (values are made
            label-safe the same way).
        cfg: scheduler routing for ``list`` (e.g. ``{"namespace": ...}``).
        without: label keys (without :data:`LABEL_PREFIX`): apps carrying any of them, with
            any value, are left out (e.g. ones :func:`set_app_labels` marked as done).

    Returns:
        The matching apps (any state), in the scheduler's listing order.

    Raises:
        ValueError: the scheduler does not support labels, or a key is invalid.
    """
    sched: Any = runner._scheduler(scheduler)
    if not getattr(sched, "supports_app_labels", False):
        raise ValueError(
            f"scheduler `{scheduler}` does not support app labels: find its apps by handle"
        )
    wanted = labels_metadata(labels)
    unwanted = {LABEL_PREFIX + check_label_key(k) for k in without}
    session = runner.name()
    by_labels = getattr(sched, "list_by_labels", None)
    if by_labels is not None:
        rows = [(r.app_id, r.state, r.labels) for r in by_labels(wanted, cfg)]
    else:
        rows = []
        for listed in sched.list(cfg):
            desc = sched.describe(listed.app_id)
            if desc is not None:
                rows.append((listed.app_id, desc.state, app_labels(desc.metadata)))
    return [
        FoundApp(
            app_handle=f"{scheduler}://{session}/{app_id}",
            state=state,
            labels={k.removeprefix(LABEL_PREFIX): v for k, v in found.items()},
        )
        for app_id, state, found in rows
        if matches(found, wanted) and not unwanted.intersection(found)
    ]


def set_app_labels(runner: Runner, app_handle: str, labels: Mapping[str, object]) -> None:
    """Adds ``labels`` to an existing app (a new value replaces an old one of the same key).

    Later :func:`find_apps` calls (from any process) and ``describe`` see them. ``kubernetes``
    patches the app's Jobs (plain mode) or Volcano Job; ``local_docker`` keeps each added
    label on a marker volume next to the containers (their labels cannot change), removed
    with the app; ``slurm`` rewrites the job comment (``scontrol update``, ``sacctmgr`` once
    the job has ended).

    Args:
        runner: the runner.
        app_handle: ``scheduler://session/app_id``.
        labels: ``{key: value}`` (keys checked, values made label-safe as in ``find_apps``).

    Raises:
        ValueError: the scheduler does not support labels, a key is invalid, or the app does
            not exist.
    """
    from torchx.specs.api import parse_app_handle  # lazy: DAG files import this module

    scheduler, _, app_id = parse_app_handle(app_handle)
    sched: Any = runner._scheduler(scheduler)
    if not getattr(sched, "supports_app_labels", False):
        raise ValueError(
            f"scheduler `{scheduler}` does not support app labels: {app_handle} cannot be labelled"
        )
    sched.set_app_labels(app_id, labels_metadata(labels))


def placement(runner: Runner, scheduler: str, cfg: Optional[Mapping[str, CfgVal]] = None) -> str:
    """Where the apps of ``scheduler`` live, seen from this process (``Scheduler.placement``).

    Record it with an app at launch; a process whose placement differs cannot follow the
    app (its handle means another host's or engine's app). ``""``: reachable from any
    process that reaches the scheduler (``kubernetes``, ``slurm``, plugins by default).
    ``local_cwd``: ``"host:<hostname>/<boot id>"`` (no PID-namespace part: a container
    restarted on the same host keeps it; a reboot changes it, and the host's apps are gone).
    ``local_docker``: ``"docker:<engine ID>"`` (asks the engine once).

    Args:
        runner: the runner.
        scheduler: the scheduler name.
        cfg: run options (a scheduler may route on them).

    Raises:
        DockerUnavailableError: ``local_docker`` and no engine answers.
    """
    sched: Any = runner._scheduler(scheduler)
    where = getattr(sched, "placement", None)
    return str(where(cfg)) if where is not None else ""
