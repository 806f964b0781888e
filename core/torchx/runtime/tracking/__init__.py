"""Result tracking for applications (e.g. HPO trials): ``tracker[trial_idx] = {...}``.

Example::

    from torchx.runtime.tracking import FsspecResultTracker

    tracker = FsspecResultTracker("s3://bucket/experiment")
    tracker[0] = {"loss": 0.1}
    assert tracker[0]["loss"] == 0.1
"""

from __future__ import annotations

import abc
import json
from typing import Any

__all__ = ["FsspecResultTracker", "ResultTracker"]

TrackerKey = str | int
TrackerResult = dict[str, Any]


class ResultTracker(abc.ABC):
    """A key-value store of results; keys are trial indices (stored as strings)."""

    @abc.abstractmethod
    def put(self, key: str, value: TrackerResult) -> None:
        """Stores ``value`` (a JSON-serializable dict) under ``key``."""

    @abc.abstractmethod
    def get(self, key: str) -> TrackerResult:
        """Returns the value stored under ``key``.

        Raises:
            KeyError: nothing is stored under ``key``.
        """

    def __setitem__(self, key: TrackerKey, value: TrackerResult) -> None:
        self.put(str(key), value)

    def __getitem__(self, key: TrackerKey) -> TrackerResult:
        return self.get(str(key))


class FsspecResultTracker(ResultTracker):
    """Stores each result as ``{tracker_base}/{key}.json`` on any fsspec filesystem.

    Args:
        tracker_base: a local directory or fsspec URL (created on first write).
    """

    def __init__(self, tracker_base: str) -> None:
        self._tracker_base = tracker_base.rstrip("/")

    def _path(self, key: str) -> str:
        if not key or "/" in key or key in (".", ".."):
            raise ValueError(f"invalid tracker key {key!r}: use a trial index or a plain name")
        return f"{self._tracker_base}/{key}.json"

    def put(self, key: str, value: TrackerResult) -> None:
        """Writes ``value`` as JSON to ``{tracker_base}/{key}.json``."""
        import fsspec

        path = self._path(key)
        fs, fs_path = fsspec.core.url_to_fs(path)
        fs.makedirs(self._tracker_base_of(fs_path), exist_ok=True)
        with fs.open(fs_path, "w") as f:
            json.dump(value, f)

    @staticmethod
    def _tracker_base_of(fs_path: str) -> str:
        return fs_path.rpartition("/")[0] or "/"

    def get(self, key: str) -> TrackerResult:
        """Reads ``{tracker_base}/{key}.json``."""
        import fsspec

        fs, fs_path = fsspec.core.url_to_fs(self._path(key))
        try:
            with fs.open(fs_path, "r") as f:
                result: TrackerResult = json.load(f)
        except FileNotFoundError:
            raise KeyError(f"no result for trial `{key}` under {self._tracker_base}") from None
        return result
