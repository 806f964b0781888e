"""A failed ``app_handle`` XCom push while following never costs the app.

The Celery stack's ``test_superseded_try_sigtermed_after_retry_reattached_leaves_the_app_to_it``
once failed this way (2026-11-29, an overloaded machine): try 2 re-attached and followed the app,
its push of the ``app_handle`` XCom got a 409 (a unique constraint violation: the superseded
try 1 wrote the same key at that moment), and the error left the follow, which cancelled the
healthy app. The push is retried once, then logged; the follow goes on.
"""

from __future__ import annotations

import importlib.util
import logging
import types
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("airflow") is None,
    reason="apache-airflow is not installed (pip install -e '.[airflow]')",
)

HANDLE = "kubernetes://torchx/ns:app-1"


class _Ti:
    """A task instance whose ``xcom_push`` fails ``failures`` times, as the Execution API did."""

    try_number = 2

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.pushed: list[tuple[str, Any]] = []

    def xcom_push(self, key: str, value: Any) -> None:
        if self.failures:
            self.failures -= 1
            from airflow.sdk.exceptions import AirflowRuntimeError, ErrorType
            from airflow.sdk.execution_time.comms import ErrorResponse

            raise AirflowRuntimeError(
                ErrorResponse(error=ErrorType.API_SERVER_ERROR, detail={"status_code": 409})
            )
        self.pushed.append((key, value))


@pytest.fixture
def manager(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A function making an ``AppManager`` for a task instance (imported before ``caplog``)."""
    from torchx_airflow import _manager

    monkeypatch.setattr(_manager, "_PUSH_RETRY_DELAY", 0.0)

    def make(ti: _Ti) -> Any:
        op = types.SimpleNamespace(
            log=logging.getLogger("tx-test-push"), durable=False, do_xcom_push=True
        )
        return _manager.AppManager(op, {"ti": ti})

    return make


def test_a_push_that_fails_once_is_retried(manager: Any) -> None:
    ti = _Ti(failures=1)
    mgr = manager(ti)
    mgr.push_handle(HANDLE)
    assert ti.pushed == [("app_handle", HANDLE)] and mgr.handle_pushed


def test_a_push_that_keeps_failing_is_logged_and_the_follow_goes_on(
    manager: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ti = _Ti(failures=5)
    mgr = manager(ti)
    with caplog.at_level(logging.WARNING, logger="tx-test-push"):
        mgr.push_handle(HANDLE)  # no exception: the follow that called it goes on
    assert ti.pushed == [] and not mgr.handle_pushed and ti.failures == 3  # two tries
    (record,) = caplog.records
    assert f"could not push the app_handle XCom of TorchX app {HANDLE}" in record.getMessage()
