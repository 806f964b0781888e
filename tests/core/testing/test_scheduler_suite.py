"""The shipped scheduler suite (torchx.testing) over the fake, local_cwd and local_docker."""

from __future__ import annotations

from typing import Any

import pytest

from torchx.schedulers.api import Scheduler
from torchx.specs.api import AppState
from torchx.testing import APP_KINDS, FakeScheduler, SchedulerTestSuite, make_app


class TestFakeScheduler(SchedulerTestSuite):
    timeout = 10.0

    def create_scheduler(self) -> Scheduler[Any]:
        return FakeScheduler("test")


class TestLocalCwd(SchedulerTestSuite):
    delete_removes = False  # local_cwd keeps an ended app's state and logs

    def create_scheduler(self) -> Scheduler[Any]:
        from torchx.schedulers.local_scheduler import create_scheduler

        return create_scheduler("suite", grace_period=1)


@pytest.mark.docker
class TestLocalDocker(SchedulerTestSuite):
    def create_scheduler(self) -> Scheduler[Any]:
        from torchx.schedulers.docker_scheduler import create_scheduler

        return create_scheduler("suite", grace_period=1)

    def image(self) -> str:
        return "torchx-flow/busybox:latest"


def test_unknown_app_kind_names_the_kinds() -> None:
    with pytest.raises(ValueError, match="use one of echo, sleep"):
        make_app("nope", "img")
    assert {make_app(k, "img").roles[0].image for k in APP_KINDS} == {"img"}


def test_fake_scheduler_replays_described_behaviour() -> None:
    sched = FakeScheduler("s")
    app_id = sched.submit(make_app("retry", "img"), {})
    suite = TestFakeScheduler()
    suite.scheduler, suite.submitted = sched, [app_id]
    desc = suite.wait_terminal(app_id)
    assert desc.state == AppState.SUCCEEDED and desc.num_restarts == 1
    app = make_app("retry", "img")
    app.roles[0].max_retries = 0
    failing = sched.submit(app, {})
    assert suite.wait_terminal(failing).state == AppState.FAILED
