"""Worker mode after a failed follow: the app is stopped, unless the scheduler never answered.

``AppManager.abandon`` is what ``execute`` (and the hand-back from the triggerer) does when the
follow raised: an unanswering scheduler (``SchedulerUnreachableError`` after ``transient_timeout``)
says nothing about the app, so the app is left for a retry to re-attach to; any other error stops it.
A real ``local_cwd`` app and the real ``stop`` path (``on_finish_action="delete"``).
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from _airflow_support import import_airflow_isolated

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("airflow") is None,
    reason="apache-airflow is not installed (pip install -e '.[airflow]')",
)


@pytest.fixture(scope="module", autouse=True)
def _airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    import_airflow_isolated(tmp_path_factory.mktemp("airflow_home"), "torchx_airflow._manager")
    yield


def _manager(runner: Any) -> Any:
    from torchx_airflow._manager import AppManager

    mgr: Any = object.__new__(AppManager)  # only what abandon/stop read
    mgr._runner = runner
    mgr.op = SimpleNamespace(on_finish_action="delete")
    mgr.log = logging.getLogger("test_airflow_abandon")
    mgr.app_handle = None
    mgr.newer_owner = lambda handle: 0  # no later try owns it
    return mgr


@pytest.mark.parametrize("unreachable", [True, False])
def test_only_an_unanswering_scheduler_leaves_the_app(tmp_path: Path, unreachable: bool) -> None:
    from torchx.runner import get_runner
    from torchx.runner.follow import SchedulerUnreachableError
    from torchx.specs.api import AppDef, Role

    marker = tmp_path / "go"
    code = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)"
    role = Role("r", "img", entrypoint=sys.executable, args=["-c", code, str(marker)])
    with get_runner() as runner:
        info = runner.dryrun(AppDef("abandon", roles=[role]), "local_cwd", cfg={})
        handle = runner.schedule(info)
        try:
            error = (
                SchedulerUnreachableError("no answer", handle, ConnectionResetError())
                if unreachable
                else RuntimeError("boom")
            )
            _manager(runner).abandon(handle, error)
            status = runner.status(handle)
            if unreachable:  # still there a moment later (a stop would have ended it at once)
                time.sleep(0.5)
                status = runner.status(handle)
                assert status is not None and not status.is_terminal(), status
            else:
                assert status is None or status.is_terminal()
        finally:
            marker.touch()
            runner.wait(handle, wait_interval=0.1)
