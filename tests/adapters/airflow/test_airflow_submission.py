"""A retry that finds an earlier try's app only partly created waits for the verdict first.

The Kubernetes scheduler reports such an app PENDING ("submission in progress: ...") while its
submitter may still run, then FAILED ("app half-created: ...") or complete
(``torchx.schedulers.submission``). The live case (a killed first try, the retry at once) is
``test_airflow_half_created.py``; here the waiting itself, on a runner that replays statuses.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Optional

import pytest

from torchx.schedulers.submission import (
    HALF_CREATED,
    IN_PROGRESS,
    half_created,
    submission_in_progress,
)
from torchx.specs.api import AppState, AppStatus
from torchx_airflow._attach import await_submission
from torchx_airflow._reattach import Decision, decide

IN_PROGRESS_STATUS = AppStatus(AppState.PENDING, msg=f"{IN_PROGRESS}worker[1] not created yet")
HALF = AppStatus(AppState.FAILED, msg=f"{HALF_CREATED}worker[1] has no Job (...); run it again")


class _Replay:
    """A runner whose ``status`` returns the given statuses in turn (the last one forever)."""

    def __init__(self, statuses: Sequence[Optional[AppStatus]]) -> None:
        self.statuses, self.reads = list(statuses), 0

    def status(self, app_handle: str) -> Optional[AppStatus]:
        assert app_handle == "kubernetes://default:app-1"
        self.reads += 1
        return self.statuses[min(self.reads, len(self.statuses)) - 1]


@pytest.mark.parametrize(
    "later, decision",
    [
        (HALF, Decision.LAUNCH),  # the submitter died: replace the app
        (AppStatus(AppState.RUNNING), Decision.REATTACH),  # it finished: wait for the app
        (None, Decision.LAUNCH),  # deleted meanwhile
    ],
)
def test_a_retry_waits_while_the_app_is_being_created(
    later: Optional[AppStatus], decision: Decision, caplog: pytest.LogCaptureFixture
) -> None:
    runner = _Replay([IN_PROGRESS_STATUS, IN_PROGRESS_STATUS, later])
    log = logging.getLogger("test_submission")
    with caplog.at_level(logging.INFO, "test_submission"):
        status = await_submission(
            runner,  # type: ignore[arg-type]
            "kubernetes://default:app-1",
            IN_PROGRESS_STATUS,
            log,
            interval=0.01,
        )
    assert status is later and runner.reads == 3
    assert decide(status) is decision
    assert "submission in progress: worker[1] not created yet; waiting" in caplog.text


def test_an_app_not_in_submission_is_taken_as_it_is() -> None:
    runner = _Replay([HALF])
    for status in (AppStatus(AppState.PENDING, msg="worker[0] Unschedulable"), HALF, None):
        assert (
            await_submission(runner, "kubernetes://default:app-1", status, None)  # type: ignore[arg-type]
            is status
        )
    assert runner.reads == 0


def test_the_predicates_read_state_and_message_together() -> None:
    assert submission_in_progress(IN_PROGRESS_STATUS) and not half_created(IN_PROGRESS_STATUS)
    assert half_created(HALF) and not submission_in_progress(HALF)
    # the same words under another state are not the verdict
    assert not half_created(AppStatus(AppState.PENDING, msg=HALF.msg))
    assert not submission_in_progress(AppStatus(AppState.RUNNING, msg=IN_PROGRESS_STATUS.msg))
    assert not submission_in_progress(None) and not half_created(None)
