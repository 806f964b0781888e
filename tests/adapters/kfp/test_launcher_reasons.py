"""The launcher's log says why an app waits (Kueue's admission message, a pull error), once per change.

The follow loop hands ``on_status`` each status whose state or message changed; these statuses
are what the kubernetes scheduler's ``describe`` gives while Kueue holds an app (the live run is
``tests/core/schedulers/kubernetes/test_live_kueue_frontends.py``).
"""

from __future__ import annotations

import pytest

pytest.importorskip("kfp")

from torchx.specs.api import NONE, AppState, AppStatus
from torchx_kfp._in_task.launch import _ReasonLog

HANDLE = "kubernetes://torchx/ns:app-1"
WAITING = "waiting for Kueue admission in queue lq: insufficient unused quota for cpu"


def test_each_new_reason_is_emitted_once_and_none_or_an_end_never() -> None:
    lines: list[str] = []
    log = _ReasonLog(HANDLE, lines.append)
    for state, msg in [
        (AppState.SUBMITTED, NONE),
        (AppState.PENDING, ""),
        (AppState.PENDING, WAITING),
        (AppState.PENDING, WAITING),  # a state change elsewhere: same reason, not repeated
        (AppState.PENDING, "main[0] ErrImagePull: pull failed"),
        (AppState.RUNNING, NONE),
        (AppState.SUCCEEDED, "finished"),
    ]:
        log(AppStatus(state, msg=msg))
    assert lines == [
        f"TorchX app {HANDLE} is PENDING: {WAITING}",
        f"TorchX app {HANDLE} is PENDING: main[0] ErrImagePull: pull failed",
    ]
