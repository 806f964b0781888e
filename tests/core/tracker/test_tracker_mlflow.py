"""The MLflow backend against a real local file-store MLflow (needs the [mlflow] extra)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mlflow", reason="mlflow is not installed (pip install 'torchx-flow[mlflow]')")

from torchx.tracker.api import TrackerArtifact, TrackerSource, build_trackers
from torchx.tracker.mlflow import MLflowTracker, create

PREP, TRAIN, EVAL = (f"local_cwd://torchx/{n}-1" for n in ("prep", "train", "eval"))


@pytest.fixture
def tracker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MLflowTracker:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    return create(f"file://{tmp_path / 'mlruns'}#lineage-test")


def test_metadata_artifacts_sources(tracker: MLflowTracker) -> None:
    tracker.add_metadata(TRAIN, lr=0.1, layers=[32, 1])
    tracker.add_metadata(TRAIN, lr=0.01)
    assert tracker.metadata(TRAIN) == {"lr": 0.01, "layers": [32, 1]}
    tracker.add_artifact(TRAIN, "checkpoint", "/ckpt/model.pt", {"step": 3})
    assert tracker.artifacts(TRAIN) == {
        "checkpoint": TrackerArtifact("checkpoint", "/ckpt/model.pt", {"step": 3})
    }
    tracker.add_source(TRAIN, PREP, "dataset")
    tracker.add_source(TRAIN, PREP, "dataset")
    assert list(tracker.sources(TRAIN)) == [TrackerSource(PREP, "dataset")]


def test_lineage_three_steps(tracker: MLflowTracker) -> None:
    tracker.add_source(TRAIN, PREP, "dataset")
    tracker.add_source(EVAL, TRAIN, "checkpoint")
    assert set(tracker.run_ids()) == {TRAIN, EVAL}
    assert list(tracker.run_ids(parent_run_id=TRAIN)) == [EVAL]
    lineage = tracker.lineage(EVAL)
    assert lineage.ancestors == [TRAIN, PREP]
    assert tracker.lineage(PREP).descendants == [TRAIN, EVAL]


def test_registered_as_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    (tracker,) = build_trackers({"mlflow": f"file://{tmp_path / 'mlruns'}"})
    assert isinstance(tracker, MLflowTracker)


def test_missing_config_is_clear() -> None:
    with pytest.raises(ValueError, match="needs a tracking URI"):
        create(None)
