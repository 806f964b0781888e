"""The Celery stack shared by test_dags_celery.py and test_dags_celery_lineage.py.

``celery_stack`` starts it with the first test that asks for it (tests/_celery_shared.py) and
:func:`pytest_runtest_teardown` removes it after the last test in a row that asks for it, so
it is up once for both modules (one xdist group, ``stack``, runs them one after the other) and
not a moment longer. A later test that asks again starts a new one.
"""

from __future__ import annotations

from collections.abc import Generator

import _celery_shared
import pytest
from _celery_stack import CeleryStack

FIXTURE = "celery_stack"


@pytest.fixture
def celery_stack() -> CeleryStack:
    """The shared Celery stack, up and healthy with the DAGs of both modules parsed."""
    return _celery_shared.get()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, None, None]:
    """After the test's own teardown, removes the shared stack unless the next test uses it."""
    try:
        return (yield)
    finally:
        if FIXTURE in getattr(item, "fixturenames", ()) and (
            nextitem is None or FIXTURE not in getattr(nextitem, "fixturenames", ())
        ):
            _celery_shared.release()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Removes the shared stack if a stopped run (``-x``, Ctrl-C) left it up."""
    _celery_shared.release()
