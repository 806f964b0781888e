"""``SchedulerTestSuite``: the lifecycle tests every scheduler should pass (pytest style).

Subclass it in a test module as ``class TestMyScheduler(SchedulerTestSuite)`` and implement
:meth:`~SchedulerTestSuite.create_scheduler` (and :meth:`~SchedulerTestSuite.image` when the
scheduler runs images). Flags declare what a scheduler does not support; the hooks
(:meth:`~SchedulerTestSuite.make_app`, :meth:`~SchedulerTestSuite.cfg`) can be overridden to adapt
the apps, e.g. to add a namespace or a mount.

Capabilities turned off. Each test of one capability is declared with :func:`_requires`. When a
subclass turns a capability off (``supports_retries = False``), ``__init_subclass__`` replaces
that test in the subclass with one that calls ``pytest.skip`` with the reason, so the report
shows ``SKIPPED`` (never a ``PASSED`` for a test that checked nothing). A subclass that sets
``omit_unsupported = True`` leaves those tests out of collection instead: the project's own
suites do that for what their schedulers cannot do (so their run shows 0 skipped) and say why
next to the flag. A sub-subclass that turns a capability back on gets the real test again.
pytest is imported only when a skip runs, so ``import torchx.testing`` does not need it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Optional, TypeVar

from torchx.schedulers.api import DescribeAppResponse, Scheduler, Stream
from torchx.specs.api import AppDef, AppState, CfgVal, is_terminal
from torchx.testing._apps import make_app

__all__ = ["SchedulerTestSuite"]

_CAPABILITIES: dict[str, str] = {
    "supports_retries": "replicas are restarted up to Role.max_retries",
    "supports_streams": "log_iter separates stdout and stderr",
    "supports_list": "list() shows the scheduler's apps",
    "supports_fail_fast": "one failed replica fails the app and stops the others",
    "supports_tail": "log_iter(should_tail=True) follows a replica until it ends",
}
"""The capability flags of :class:`SchedulerTestSuite` and what each one promises."""

_REQUIRES = "__torchx_testing_requires__"
_STANDIN = "__torchx_testing_standin__"
_F = TypeVar("_F", bound=Callable[..., Any])


def _requires(*flags: str) -> Callable[[_F], _F]:
    """Declares the capability flags (keys of ``_CAPABILITIES``) a suite test checks."""
    unknown = set(flags) - set(_CAPABILITIES)
    assert not unknown, f"unknown capability flags {sorted(unknown)}"

    def mark(test: _F) -> _F:
        setattr(test, _REQUIRES, flags)
        return test

    return mark


def _implementation(cls: type, name: str) -> Any:
    """The nearest real definition of ``name`` in ``cls``'s MRO (not a stand-in or an omission)."""
    for klass in cls.__mro__:
        value = klass.__dict__.get(name)
        if value is not None and not getattr(value, _STANDIN, False):
            return value
    return None


def _skipping(test: Callable[..., Any], reason: str) -> Callable[..., Any]:
    """A stand-in for ``test`` that reports it skipped with ``reason`` (pytest imported lazily)."""

    def standin(self: Any) -> None:
        import pytest  # lazy: pytest ~90 ms, optional: only when a skip runs

        pytest.skip(reason)

    standin.__name__, standin.__qualname__ = test.__name__, test.__qualname__
    standin.__doc__ = test.__doc__
    setattr(standin, _STANDIN, True)
    return standin


class SchedulerTestSuite:
    """Base class of scheduler conformance tests (collected by pytest through a ``Test*`` subclass).

    Every test submits one of the apps of :func:`torchx.testing.make_app` and deletes what it
    submitted afterwards (``teardown_method``). A test of a capability the subclass turns off
    is reported SKIPPED with the reason, or left out with ``omit_unsupported = True`` (see the
    module docstring).

    Attributes:
        timeout: seconds a test waits for a state before failing.
        supports_retries: replicas are restarted up to ``Role.max_retries``.
        supports_streams: ``log_iter`` separates stdout and stderr.
        supports_list: ``list()`` shows the scheduler's apps.
        supports_fail_fast: one failed replica fails the app and stops the others.
        supports_tail: ``log_iter(should_tail=True)`` follows a replica until it ends.
        delete_removes: which behaviour ``test_delete`` asserts: after ``delete`` the app no
            longer exists (True), or it still exists in a terminal state (False).
        omit_unsupported: leave the tests of capabilities turned off out of collection
            instead of reporting them skipped.
    """

    timeout: float = 120.0
    supports_retries: bool = True
    supports_streams: bool = True
    supports_list: bool = True
    delete_removes: bool = True
    supports_fail_fast: bool = True
    supports_tail: bool = True
    omit_unsupported: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Skips (or omits) the tests of the capabilities ``cls`` turns off."""
        super().__init_subclass__(**kwargs)
        for name in dir(cls):
            test = _implementation(cls, name) if name.startswith("test_") else None
            flags: tuple[str, ...] = getattr(test, _REQUIRES, ())
            if test is None or not flags:
                continue
            off = [flag for flag in flags if not getattr(cls, flag)]
            if not off:
                if getattr(cls, name) is not test:  # turned back on below a subclass that was off
                    setattr(cls, name, test)
            elif cls.omit_unsupported:
                setattr(cls, name, None)  # pytest collects no test from a non-callable
            else:
                said = "; ".join(f"{f} = False: not checked that {_CAPABILITIES[f]}" for f in off)
                setattr(cls, name, _skipping(test, f"{cls.__name__} sets {said}"))

    # -- hooks -----------------------------------------------------------------------------

    def create_scheduler(self) -> Scheduler[Any]:
        """Returns a fresh scheduler for one test (required)."""
        raise NotImplementedError(f"{type(self).__name__} must implement create_scheduler()")

    def image(self) -> str:
        """Returns the image the test apps run in (ignored by schedulers without images)."""
        return "busybox"

    def cfg(self) -> Mapping[str, CfgVal]:
        """Returns the run config every test app is submitted with."""
        return {}

    def make_app(self, kind: str) -> AppDef:
        """Returns the app of ``kind`` (see :func:`torchx.testing.make_app`) in :meth:`image`."""
        return make_app(kind, self.image())

    # -- plumbing --------------------------------------------------------------------------

    def setup_method(self, method: Any = None) -> None:
        """Creates the scheduler under test."""
        self.scheduler = self.create_scheduler()
        self.submitted: list[str] = []

    def teardown_method(self, method: Any = None) -> None:
        """Deletes every app the test submitted and closes the scheduler."""
        try:
            for app_id in self.submitted:
                self.scheduler.delete(app_id)
        finally:
            self.scheduler.close()

    def submit(self, kind: str) -> str:
        """Submits the app of ``kind``; returns its id (deleted after the test)."""
        app_id = self.scheduler.submit(self.make_app(kind), dict(self.cfg()))
        self.submitted.append(app_id)
        return app_id

    def wait_until(
        self, app_id: str, done: Callable[[DescribeAppResponse], bool], what: str
    ) -> DescribeAppResponse:
        """Polls ``describe`` until ``done(desc)``; fails after :attr:`timeout` seconds."""
        deadline = time.monotonic() + self.timeout
        last: Optional[DescribeAppResponse] = None
        while time.monotonic() < deadline:
            last = self.scheduler.describe(app_id)
            if last is not None and done(last):
                return last
            self.scheduler.wait_for_change(app_id, min(1.0, deadline - time.monotonic()))
        state = last.state if last is not None else None
        raise AssertionError(f"{app_id} did not become {what} in {self.timeout}s (last: {state})")

    def wait_terminal(self, app_id: str) -> DescribeAppResponse:
        """Waits for a terminal state and returns the final description."""
        return self.wait_until(app_id, lambda d: is_terminal(d.state), "terminal")

    def wait_running(self, app_id: str) -> DescribeAppResponse:
        """Waits until the app is RUNNING."""
        return self.wait_until(app_id, lambda d: d.state == AppState.RUNNING, "RUNNING")

    def logs(self, app_id: str, role: str, k: int = 0, **kwargs: Any) -> list[str]:
        """Returns the log lines of a replica, stripped of their newline."""
        return [line.rstrip("\n") for line in self.scheduler.log_iter(app_id, role, k, **kwargs)]

    # -- the tests -------------------------------------------------------------------------

    def test_submit_succeeds_with_every_replica(self) -> None:
        app_id = self.submit("echo")
        desc = self.wait_terminal(app_id)
        assert desc.state == AppState.SUCCEEDED, desc
        assert desc.app_id == app_id
        replicas = [r for rs in desc.roles_statuses for r in rs.replicas]
        if replicas:
            assert sorted(r.id for r in replicas) == [0, 1]
            assert all(r.state == AppState.SUCCEEDED for r in replicas)

    def test_status_moves_forward_then_cancel(self) -> None:
        app_id = self.submit("sleep")
        seen: list[AppState] = []

        def running(desc: DescribeAppResponse) -> bool:
            if not seen or seen[-1] != desc.state:
                seen.append(desc.state)
            return desc.state == AppState.RUNNING

        self.wait_until(app_id, running, "RUNNING")
        assert seen == sorted(seen, key=lambda s: s.value), f"state went backwards: {seen}"
        assert set(seen) <= {AppState.SUBMITTED, AppState.PENDING, AppState.RUNNING}, seen
        self.scheduler.cancel(app_id)
        assert self.wait_terminal(app_id).state == AppState.CANCELLED
        self.scheduler.cancel(app_id)  # idempotent on an ended app
        desc2 = self.scheduler.describe(app_id)
        assert desc2 is not None and desc2.state == AppState.CANCELLED

    def test_log_iter_per_replica_and_regex(self) -> None:
        app_id = self.submit("echo")
        self.wait_terminal(app_id)
        for k in range(2):
            lines = self.logs(app_id, "echo", k)
            assert f"hello {k}" in lines
            assert f"hello {1 - k}" not in lines
        assert self.logs(app_id, "echo", 1, regex=r"^hel+o") == ["hello 1"]
        raw = list(self.scheduler.log_iter(app_id, "echo", 0, regex="hello"))
        assert raw == ["hello 0\n"]

    @_requires("supports_streams")
    def test_log_iter_separates_streams(self) -> None:
        app_id = self.submit("echo")
        self.wait_terminal(app_id)
        for k in range(2):
            assert self.logs(app_id, "echo", k, streams=Stream.STDOUT) == [f"hello {k}"]
            assert self.logs(app_id, "echo", k, streams=Stream.STDERR) == [f"oops {k}"]
        assert sorted(self.logs(app_id, "echo", 0, streams=Stream.COMBINED)) == [
            "hello 0",
            "oops 0",
        ]

    @_requires("supports_tail")
    def test_log_iter_tails_until_the_app_ends(self) -> None:
        app_id = self.submit("tail")
        self.wait_until(app_id, lambda d: d.state != AppState.SUBMITTED, "started")
        lines = self.logs(app_id, "tail", 0, should_tail=True)
        assert lines == ["line 1", "line 2"]
        assert self.wait_terminal(app_id).state == AppState.SUCCEEDED

    @_requires("supports_fail_fast")
    def test_fail_fast_stops_the_other_replicas(self) -> None:
        app_id = self.submit("fail")
        desc = self.wait_terminal(app_id)
        assert desc.state == AppState.FAILED
        # describe is a read; fail-fast is this explicit step (what Runner.wait calls)
        self.scheduler.enforce_fail_fast(app_id)
        desc = self.wait_until(
            app_id,
            lambda d: all(is_terminal(r.state) for rs in d.roles_statuses for r in rs.replicas),
            "stopped on every replica",
        )
        assert desc.state == AppState.FAILED

    @_requires("supports_retries")
    def test_retries_restart_a_failed_replica(self) -> None:
        app_id = self.submit("retry")
        desc = self.wait_terminal(app_id)
        assert desc.state == AppState.SUCCEEDED, desc
        assert desc.num_restarts >= 1, (
            f"num_restarts is {desc.num_restarts} after a retried replica: a scheduler that"
            " restarts replicas reports how often (-1 means it does not track restarts)"
        )
        assert "second" in self.logs(app_id, "retry", 0)

    def test_delete(self) -> None:
        app_id = self.submit("sleep")
        self.wait_running(app_id)
        self.scheduler.delete(app_id)
        desc = self.scheduler.describe(app_id)
        if self.delete_removes:
            assert desc is None and not self.scheduler.exists(app_id)
        else:
            assert desc is not None and is_terminal(desc.state)

    @_requires("supports_list")
    def test_list_shows_submitted_apps(self) -> None:
        kinds = ["echo", "fail"] if self.supports_fail_fast else ["echo", "echo"]
        ids = [self.submit(kind) for kind in kinds]
        ends = [self.wait_terminal(app_id).state for app_id in ids]
        # list reads the scheduler's own records in one call (Kubernetes: the Jobs, whose
        # conditions trail the pods describe reads by the Job controller's sync): it may
        # show the end a moment after describe did, never a different end
        deadline = time.monotonic() + 30
        while True:
            listed = {a.app_id: a for a in self.scheduler.list()}
            states = [listed[i].state if i in listed else None for i in ids]
            if states == ends or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert set(ids) <= set(listed)
        assert states == ends, (states, ends)
        assert ends[0] == AppState.SUCCEEDED

    def test_unknown_app(self) -> None:
        assert self.scheduler.describe("tx-no-such-app-b0b0b0") is None
        assert not self.scheduler.exists("tx-no-such-app-b0b0b0")
        self.scheduler.cancel("tx-no-such-app-b0b0b0")  # a no-op
