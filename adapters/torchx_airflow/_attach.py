"""Finds the app an earlier try of this task instance left behind (see ``_reattach``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any, Optional

from torchx.runner.api import Runner
from torchx.runner.labels import find_apps, placement, set_app_labels, supports_labels
from torchx.schedulers.submission import submission_in_progress
from torchx.specs.api import AppStatus
from torchx_airflow._reattach import (
    MAX_REFUSALS,
    PROCESSED_LABEL,
    AppSlot,
    Decision,
    compare,
    decide,
    other_host_message,
)
from torchx_airflow._runopts import routing_cfg
from torchx_airflow._settings import TorchXSettings
from torchx_airflow.version_compat import AirflowException

__all__ = [
    "Earlier",
    "await_submission",
    "find_earlier",
    "labelled",
    "mark_processed",
    "where_here",
]

SUBMISSION_POLL = 2.0
"""Seconds between two reads of an app whose submission is in progress."""

Earlier = tuple[Optional[str], Optional["AppStatus"]]
"""``(app handle, status)`` of an app to wait for or reuse; ``(None, None)``: launch."""


def _by_labels(
    runner: Runner,
    settings: TorchXSettings,
    scheduler: str,
    labels: Mapping[str, str],
    processed: list[str],
    log: Any,
) -> Optional[str]:
    """The newest unprocessed app carrying ``labels``; a live one before an ended one.

    Unprocessed: neither in the store's ``processed`` nor labelled :data:`PROCESSED_LABEL`.
    """
    if not labels or not supports_labels(runner, scheduler):
        return None
    cfg = routing_cfg(runner, settings, scheduler)  # e.g. the namespace the app went to
    apps = find_apps(runner, scheduler, labels, cfg, without=[PROCESSED_LABEL])
    found = [a for a in apps if a.app_handle not in processed]
    if not found:
        return None
    live = [a for a in found if a.state.name not in ("SUCCEEDED", "FAILED", "CANCELLED")]
    chosen = (live or found)[-1]
    if len(found) > 1:
        others = ", ".join(a.app_handle for a in found if a is not chosen)
        log.warning("apps of this task instance: using %s; also %s", chosen.app_handle, others)
    log.info("found app %s of an earlier try by its labels", chosen.app_handle)
    return chosen.app_handle


def where_here(runner: Runner, settings: TorchXSettings, scheduler: str, log: Any) -> str:
    """This process's ``torchx.runner.labels.placement`` for ``scheduler`` ("" when unknown)."""
    if scheduler not in ("local_cwd", "local_docker"):
        return ""  # reachable from anywhere: no engine or host to ask

    try:
        return placement(runner, scheduler, routing_cfg(runner, settings, scheduler))
    except Exception as e:
        log.warning("could not tell where %s apps live (%s: %s)", scheduler, type(e).__name__, e)
        return ""


def _elsewhere(
    runner: Runner, slot: AppSlot, handle: str, here: str, on_other_host: str, log: Any
) -> Optional[str]:
    """The recorded app, or None when it cannot be followed from ``here`` and is replaced.

    Raises:
        AirflowException: the app runs on another host or engine and this try refuses.
    """
    record = slot.get()
    where = compare(record.host, here) if here else "same"
    if where == "same":
        return handle
    if where == "rebooted":
        log.warning(
            "the app of an earlier try, %s, ran on this host before it rebooted: it is gone;"
            " launching a new app",
            handle,
        )
    else:
        message = other_host_message(handle, record.host, here)
        if on_other_host != "launch" and record.refusals < MAX_REFUSALS:
            count = slot.refuse()
            raise AirflowException(f"{message} [{count} of {MAX_REFUSALS}]")
        why = "on_other_host=launch" if on_other_host == "launch" else "refused enough"
        log.warning("%s; launching a new app (%s)", message, why)
    slot.mark_processed(handle)
    return None


def find_earlier(
    runner: Runner,
    settings: TorchXSettings,
    scheduler: str,
    slot: AppSlot,
    labels: Mapping[str, str],
    on_other_host: str,
    log: logging.Logger | Any,
    here: str = "",
) -> Earlier:
    """Returns the app of an earlier try to wait for or reuse, else ``(None, None)``.

    Nothing to find on a task instance's first try. The task state store's record comes first;
    else the label search (``labels``; it works without a store too: processed apps carry
    :data:`PROCESSED_LABEL`). An app found but not taken (ended FAILED, CANCELLED or
    vanished) is marked processed; a FAILED one also has its replicas that still run stopped
    (``Runner.enforce_fail_fast``: a failed try may not have done it, and a half-created
    Kubernetes app's rank 0 would wait for its missing peers for ever). An app whose
    submission is still in progress is waited for first (:func:`await_submission`). A
    recorded app placed elsewhere than ``here`` (:func:`where_here`) is handled by the rules
    of ``_reattach`` (placement).

    Raises:
        AirflowException: the recorded app runs on another host or engine, and this try
            refuses to launch a duplicate (``on_other_host="fail"``, at most twice per app).
    """
    record = slot.get()  # empty without a store
    handle = record.pending()
    if handle is not None and record.host:
        handle = _elsewhere(runner, slot, handle, here, on_other_host, log)
    if handle is None and not slot.first_try:
        handle = _by_labels(runner, settings, scheduler, labels, record.processed, log)
    if handle is None:
        return None, None
    status = await_submission(runner, handle, runner.status(handle), log)
    decision = decide(status)
    state = status.state.name if status is not None else "GONE"
    log.info("app of a previous try: %s is %s -> %s", handle, state, decision.value)
    if decision is Decision.LAUNCH:
        if status is not None and status.state.name == "FAILED":
            _stop_replaced(runner, handle, log)
        mark_processed(runner, slot, handle, log, on_app=bool(labels) and status is not None)
        return None, None
    return handle, status


def await_submission(
    runner: Runner,
    app_handle: str,
    status: Optional[AppStatus],
    log: Any,
    interval: float = SUBMISSION_POLL,
) -> Optional[AppStatus]:
    """Waits while an earlier try's app is only partly created; returns its status then.

    Its submitter (the earlier try) may still be creating it, or may have died doing so: the
    scheduler says which within a bounded time (``torchx.schedulers.submission``). Re-attaching
    before that would make this try fail with the half-created app and use up one more retry;
    after it, the app is either complete (re-attach) or FAILED half-created (replace it).
    """
    if not submission_in_progress(status):
        return status
    assert status is not None
    log.info(
        "app %s of a previous try: %s; waiting until it is complete or its submitter is"
        " known to have stopped",
        app_handle,
        status.msg,
    )
    while submission_in_progress(status):
        time.sleep(interval)
        status = runner.status(app_handle)
    return status


def _stop_replaced(runner: Runner, app_handle: str, log: Any) -> None:
    """Stops what still runs of a FAILED app this try replaces; never raises.

    E.g. the rank 0 of a half-created Kubernetes app, waiting for peers never created.
    """
    try:
        runner.enforce_fail_fast(app_handle)
    except Exception as e:
        log.warning(
            "could not stop the replicas still running in %s (%s: %s); cancel it by hand",
            app_handle,
            type(e).__name__,
            e,
        )


def mark_processed(
    runner: Runner, slot: AppSlot, app_handle: str, log: Any, on_app: bool = True
) -> None:
    """Records that a try saw ``app_handle`` end: no later try (or cleared task) reuses it.

    In the task state store (when this task instance keeps a record there, or its apps carry
    labels), and with ``on_app`` on the app itself (:data:`PROCESSED_LABEL`) when its
    scheduler has labels. Never raises for the label: a warning says what it means.
    """
    on_scheduler = labelled(runner, app_handle)
    if slot.written or slot.get().app_handle or on_scheduler:
        slot.mark_processed(app_handle)
    if not (on_app and on_scheduler):
        return

    try:
        set_app_labels(runner, app_handle, {PROCESSED_LABEL: "true"})
    except Exception as e:
        log.warning(
            "could not label TorchX app %s processed (%s: %s): without the task state store a"
            " cleared task may reuse it",
            app_handle,
            type(e).__name__,
            e,
        )


def labelled(runner: Runner, app_handle: str) -> bool:
    """Whether the app's scheduler supports labels (a later try could find the app by them)."""
    return supports_labels(runner, app_handle.partition("://")[0])
