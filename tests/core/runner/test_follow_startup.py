"""The follow layer's startup timeout: an app that does not start in time is cancelled.

A real local_cwd app shows that a started app disarms it; an in-test scheduler whose apps
stay PENDING (the state a Kubernetes pod in ``ImagePullBackOff`` shows; the live test is in
tests/core/schedulers/kubernetes) shows the cancel and the reason.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Optional

import pytest

from torchx.runner import Runner, get_runner
from torchx.runner.follow import Follower, follow
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse, Scheduler
from torchx.specs.api import (
    AppDef,
    AppDryRunInfo,
    AppState,
    AppStatus,
    CfgVal,
    ReplicaStatus,
    Resource,
    Role,
    RoleStatus,
    runopts,
)

WAITING = "worker[1] waiting: ImagePullBackOff: Back-off pulling image"


class StuckScheduler(Scheduler[Mapping[str, CfgVal]]):
    """Apps stay in ``state`` (replica 0 RUNNING, replica 1 PENDING) until cancelled."""

    def __init__(self, session_name: str, state: AppState = AppState.PENDING) -> None:
        super().__init__("stuck", session_name)
        self.state = state
        self.apps: dict[str, AppState] = {}
        self.cancels = 0

    def _run_opts(self) -> runopts:
        return runopts()

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, CfgVal]) -> AppDryRunInfo[Any]:
        return AppDryRunInfo(app.name, str)

    def schedule(self, dryrun_info: AppDryRunInfo[Any]) -> str:
        app_id = f"{dryrun_info.request}-{len(self.apps)}"
        self.apps[app_id] = self.state
        return app_id

    def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
        state = self.apps[app_id]
        replicas = [
            ReplicaStatus(
                0, AppState.RUNNING if state == AppState.RUNNING else state, "worker", ""
            ),
            ReplicaStatus(
                1, AppState.PENDING if state == AppState.RUNNING else state, "worker", ""
            ),
        ]
        return DescribeAppResponse(
            app_id=app_id,
            state=state,
            msg=WAITING if state in (AppState.PENDING, AppState.RUNNING) else "",
            roles_statuses=[RoleStatus("worker", replicas)],
        )

    def list(self, cfg: Optional[Mapping[str, CfgVal]] = None) -> list[ListAppResponse]:
        return [ListAppResponse(app_id=a, state=s) for a, s in self.apps.items()]

    def _cancel_existing(self, app_id: str) -> None:
        self.cancels += 1
        self.apps[app_id] = AppState.CANCELLED

    def log_iter(
        self, app_id: str, role_name: str, k: int = 0, *args: Any, **kwargs: Any
    ) -> Iterable[str]:
        return iter([])


def stuck_runner(state: AppState) -> Runner:
    return Runner("sess", {"stuck": lambda session_name, **_: StuckScheduler(session_name, state)})


def stuck_app() -> AppDef:
    role = Role("worker", image="img", num_replicas=2, resource=Resource(cpu=1, gpu=0, memMB=64))
    return AppDef("app", roles=[role])


@pytest.mark.parametrize("state", [AppState.PENDING, AppState.RUNNING], ids=["app", "replica"])
def test_an_app_that_does_not_start_is_cancelled_with_the_reason(state: AppState) -> None:
    with stuck_runner(state) as runner:
        handle = runner.run(stuck_app(), "stuck")
        result = follow(runner, handle, startup_timeout=0.3, wait_interval=0.1)
        assert result.startup_expired and result.cancelled and not result.deadline_expired
        assert result.state == "CANCELLED"
        assert result.reason == f"did not start within 0.3s ({state.name}: {WAITING})"
        head = result.failure_message().splitlines()[0]
        assert head == f"TorchX app {handle} ended CANCELLED: {result.reason}"


def test_on_status_gets_each_changed_status_in_the_callers_thread() -> None:
    seen: list[tuple[str, str, str]] = []

    def on_status(status: AppStatus) -> None:
        seen.append((status.state.name, status.msg, threading.current_thread().name))

    with stuck_runner(AppState.PENDING) as runner:
        handle = runner.run(stuck_app(), "stuck")
        follow(runner, handle, startup_timeout=0.3, wait_interval=0.05, on_status=on_status)
    me = threading.current_thread().name
    assert seen == [("PENDING", WAITING, me)]  # polled several times, reported once


def test_a_kept_app_is_reported_still_waiting() -> None:
    with stuck_runner(AppState.PENDING) as runner:
        handle = runner.run(stuck_app(), "stuck")
        result = follow(
            runner, handle, startup_timeout=0.2, cancel_at_deadline=False, wait_interval=0.1
        )
        assert result.startup_expired and not result.cancelled and result.state == "PENDING"
        assert result.reason.endswith(f"(PENDING: {WAITING}) (kept running)")
        status = runner.status(handle)
        assert status is not None and status.state == AppState.PENDING


def test_the_overall_deadline_still_wins_when_earlier() -> None:
    with stuck_runner(AppState.PENDING) as runner:
        handle = runner.run(stuck_app(), "stuck")
        result = follow(runner, handle, timeout=0.2, startup_timeout=30, wait_interval=0.1)
        assert result.deadline_expired and not result.startup_expired
        assert result.reason == "its deadline passed"


def test_a_negative_startup_timeout_is_refused() -> None:
    match = "`startup_timeout` must be >= 0 seconds, got -1"
    with stuck_runner(AppState.PENDING) as runner, pytest.raises(ValueError, match=match):
        Follower(runner, "stuck://sess/x", startup_timeout=-1)


@pytest.fixture
def runner() -> Iterator[Runner]:
    with get_runner() as r:
        yield r


def test_a_started_local_app_is_not_stopped_by_the_startup_timeout(runner: Runner) -> None:
    code = "import time; print('up', flush=True); time.sleep(2)"
    role = Role("worker", image="", entrypoint=sys.executable, args=["-c", code])
    handle = runner.run(AppDef("starts", roles=[role]), "local_cwd")
    with Follower(runner, handle, startup_timeout=0.5, wait_interval=0.1) as follower:
        assert follower.wait(1.5) is False  # past the startup timeout, still running
        result = follower.result()
    assert result.succeeded and not result.startup_expired and not result.cancelled
