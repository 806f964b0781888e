"""The worker's follow logs the PENDING reason when it changes (Kueue's message, a pull error).

The follow loop calls ``AppManager._on_status`` with each status whose state or message changed;
the live run is ``tests/core/schedulers/kubernetes/test_live_kueue_frontends.py``.
"""

from __future__ import annotations

import importlib.util
import logging
import types

import pytest

from torchx.specs.api import NONE, AppState, AppStatus

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("airflow") is None,
    reason="apache-airflow is not installed (pip install -e '.[airflow]')",
)

WAITING = "waiting for Kueue admission in queue lq: insufficient unused quota for cpu"


@pytest.fixture
def manager_cls() -> type:
    """``AppManager``, imported before ``caplog`` captures: importing Airflow sets up its logging."""
    from torchx_airflow._manager import AppManager

    return AppManager


def test_the_pending_reason_is_logged_when_it_changes(
    manager_cls: type, caplog: pytest.LogCaptureFixture
) -> None:
    AppManager = manager_cls
    op = types.SimpleNamespace(log=logging.getLogger("tx-test-manager"), durable=False)
    mgr = AppManager(op)
    mgr.app_handle = "kubernetes://torchx/ns:app-1"
    with caplog.at_level(logging.INFO, logger="tx-test-manager"):
        for state, msg in [
            (AppState.SUBMITTED, NONE),
            (AppState.PENDING, WAITING),
            (AppState.PENDING, WAITING),
            (AppState.PENDING, "main[0] ErrImagePull: pull failed"),
            (AppState.PENDING, WAITING),  # back to waiting: a change, logged again
            (AppState.RUNNING, "worker[1] Unschedulable: 0/1 nodes are available"),
        ]:
            mgr._on_status(AppStatus(state, msg=msg))
    assert [r.getMessage() for r in caplog.records] == [
        f"TorchX app {mgr.app_handle} is PENDING: {WAITING}",
        f"TorchX app {mgr.app_handle} is PENDING: main[0] ErrImagePull: pull failed",
        f"TorchX app {mgr.app_handle} is PENDING: {WAITING}",
    ]
