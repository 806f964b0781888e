"""``torchx.cli._gc``: the collector paused while ``torchx run`` starts, then resumed."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from torchx.cli import _gc


@pytest.fixture(autouse=True)
def _restore_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_resume_enables_the_collector_and_freezes_what_the_start_made() -> None:
    gc.enable()
    _gc.pause()
    assert not gc.isenabled()
    _gc.resume()
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0  # the start's objects: out of every later collection


def test_resume_without_a_pause_leaves_the_callers_setting() -> None:
    gc.disable()
    _gc.pause()  # already disabled by the caller: not ours to enable again
    _gc.resume()
    assert not gc.isenabled()
    assert gc.get_freeze_count() == 0
