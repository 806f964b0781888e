"""Tracking of runs: metadata, artifacts and lineage across pipeline steps.

Inside a job::

    from torchx.tracker import app_run_from_env

    run = app_run_from_env()
    run.add_metadata(lr=0.1)
    run.add_artifact("checkpoint", "/tmp/ckpt/model.pt")
"""

from __future__ import annotations

from torchx.tracker.api import (
    AppRun,
    Lineage,
    TrackerArtifact,
    TrackerBase,
    TrackerSource,
    build_trackers,
    trackers_from_environ,
)

__all__ = [
    "AppRun",
    "Lineage",
    "TrackerArtifact",
    "TrackerBase",
    "TrackerSource",
    "app_run_from_env",
    "build_trackers",
    "trackers_from_environ",
]


def app_run_from_env() -> AppRun:
    """Returns the run of the current job (sugar for :py:meth:`AppRun.run_from_env`)."""
    return AppRun.run_from_env()
