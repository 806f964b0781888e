"""The shipped scheduler suite (torchx.testing) over the fake, local_cwd and local_docker, and
how the suite reports a capability a scheduler turns off (skipped with the reason, or omitted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest

from torchx.schedulers.api import DescribeAppResponse, Scheduler
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


class _RetriesOff(SchedulerTestSuite):  # not collected (no Test prefix): the mechanism under test
    supports_retries = False
    supports_streams = False

    def create_scheduler(self) -> Scheduler[Any]:
        return FakeScheduler("test")


def test_a_capability_turned_off_is_skipped_with_the_reason() -> None:
    suite = _RetriesOff()
    with pytest.raises(pytest.skip.Exception, match=r"_RetriesOff sets supports_retries = False"):
        suite.test_retries_restart_a_failed_replica()
    with pytest.raises(
        pytest.skip.Exception, match=r"not checked that log_iter separates stdout and stderr"
    ):
        suite.test_log_iter_separates_streams()
    assert (
        _RetriesOff.test_list_shows_submitted_apps
        is SchedulerTestSuite.test_list_shows_submitted_apps
    )


def test_omit_unsupported_leaves_the_test_out_and_turning_back_on_restores_it() -> None:
    class Omitting(_RetriesOff):
        omit_unsupported = True

    class BackOn(Omitting):
        supports_retries = True

    assert Omitting.test_retries_restart_a_failed_replica is None
    assert Omitting.test_log_iter_separates_streams is None
    retries = SchedulerTestSuite.test_retries_restart_a_failed_replica
    assert BackOn.test_retries_restart_a_failed_replica is retries
    assert BackOn.test_log_iter_separates_streams is None


def test_a_plugin_author_sees_skipped_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "test_plugin.py").write_text(
        "from torchx.testing import FakeScheduler, SchedulerTestSuite\n"
        "class TestPlugin(SchedulerTestSuite):\n"
        "    supports_retries = False\n"
        "    def create_scheduler(self):\n"
        "        return FakeScheduler('p')\n"
    )
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-rs",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
    ]
    argv += ["-k", "retries or unknown", "test_plugin.py"]
    out = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed, 1 skipped" in out.stdout, out.stdout
    assert "TestPlugin sets supports_retries = False" in out.stdout, out.stdout


def test_num_restarts_of_minus_one_fails_the_retry_test() -> None:
    class Untracked(FakeScheduler):
        def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
            desc = super().describe(app_id)
            if desc is not None:
                desc.num_restarts = -1
            return desc

    class Suite(SchedulerTestSuite):
        timeout = 10.0

        def create_scheduler(self) -> Scheduler[Any]:
            return Untracked("u")

    suite = Suite()
    suite.setup_method()
    try:
        with pytest.raises(AssertionError, match="num_restarts is -1"):
            suite.test_retries_restart_a_failed_replica()
    finally:
        suite.teardown_method()


def test_torchx_testing_imports_without_pytest() -> None:
    code = "import sys; sys.modules['pytest'] = None; import torchx.testing; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
