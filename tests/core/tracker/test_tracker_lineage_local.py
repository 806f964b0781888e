"""Lineage over a three-step chain launched through the Runner on local_cwd."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from torchx.runner import get_runner
from torchx.specs import AppState
from torchx.tracker.backend.fsspec import create

RECORD = (
    "import sys; from torchx.tracker import app_run_from_env; r = app_run_from_env();"
    " r.add_artifact(sys.argv[1], '/data/' + sys.argv[1])"
)


def test_three_step_chain_lineage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "tracker"
    monkeypatch.setenv("TORCHX_TRACKERS", "fsspec")
    monkeypatch.setenv("TORCHX_TRACKER_FSSPEC_CONFIG", str(root))
    handles: list[str] = []
    with get_runner() as runner:
        for step in ("prep", "train", "evaluate"):
            handle = runner.run_component(
                "utils.python",
                ["--name", step, "-c", RECORD, step],
                scheduler="local_cwd",
                parent_run_id=handles[-1] if handles else None,
            )
            status = runner.wait(handle, wait_interval=5)
            assert status is not None and status.state == AppState.SUCCEEDED, status
            handles.append(handle)
    prep, train, evaluate = handles
    tracker = create(str(root))
    lineage = tracker.lineage(evaluate)
    assert lineage.ancestors == [train, prep]
    assert lineage.artifacts[prep]["prep"].path == "/data/prep"
    assert tracker.lineage(prep).descendants == [train, evaluate]
    assert sys.executable  # the replicas ran with the same interpreter's torchx
