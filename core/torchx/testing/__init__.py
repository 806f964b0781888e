"""Testing helpers shipped with torchx-flow for scheduler authors.

- :class:`SchedulerTestSuite`: the lifecycle tests (submit, status, logs, cancel, delete, list,
  fail-fast, retries) as a pytest base class; subclass it once per scheduler.
- :class:`FakeScheduler`: an in-memory scheduler that passes the suite, for tests that need a
  scheduler but no backend.
- :func:`make_app`: the small ``sh -c`` apps the suite runs (``echo``, ``sleep``, ``fail``,
  ``retry``, ``tail``).

Example (``tests/test_my_scheduler.py`` of a plugin)::

    from torchx.testing import SchedulerTestSuite
    from my_plugin.scheduler import create_scheduler

    class TestMyScheduler(SchedulerTestSuite):
        supports_retries = False

        def create_scheduler(self):
            return create_scheduler("test")

        def image(self):
            return "busybox:1.36"
"""

from __future__ import annotations

from torchx.testing._apps import APP_KINDS, make_app
from torchx.testing._suite import SchedulerTestSuite
from torchx.testing.fake_scheduler import FakeScheduler

__all__ = ["APP_KINDS", "FakeScheduler", "SchedulerTestSuite", "make_app"]
