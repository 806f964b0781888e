"""Result tracking for applications, e.g. the trials of a hyper-parameter search.

``tracker[key] = {"loss": 0.1}`` and ``tracker.put(key, loss=0.1)`` store the results of one
key; ``tracker[key]`` and ``tracker.get(key)`` read them back (``{}`` when nothing is stored).
Keys are ints or strings and are stored as ``str(key)``; slashes group results
(``tracker["trial_3/eval"]``).
"""

from __future__ import annotations

import abc
import json
from typing import Union

__all__ = ["FsspecResultTracker", "KeyType", "ResultTracker", "ResultType"]

KeyType = Union[int, str]
"""A result key: a trial index or a name."""

ResultType = Union[int, float, str]
"""One result value."""


class ResultTracker(abc.ABC):
    """A key-value store of results; one implementation per backing store.

    No consistency guarantee is made beyond the backing store's: use a unique key per writer
    (the job id, or the experiment and trial index).
    """

    def __getitem__(self, key: KeyType) -> dict[str, ResultType]:
        return self.get(key)

    def __setitem__(self, key: KeyType, results: dict[str, ResultType]) -> None:
        self.put(key, **results)

    @abc.abstractmethod
    def put(self, key: KeyType, **results: ResultType) -> None:
        """Stores ``results`` under ``str(key)``, replacing what was stored there."""

    @abc.abstractmethod
    def get(self, key: KeyType) -> dict[str, ResultType]:
        """Returns the results stored under ``str(key)``, or ``{}`` if there are none."""


class FsspecResultTracker(ResultTracker):
    """Stores the results of each key as JSON in ``{tracker_base}/{key}.json`` (any fsspec URL).

    Args:
        tracker_base: a local directory or fsspec URL (created on first write).
    """

    def __init__(self, tracker_base: str) -> None:
        self._tracker_base = tracker_base.rstrip("/")

    def _path(self, key: KeyType) -> str:
        name = str(key)
        parts = name.split("/")
        if not name or any(part in ("", ".", "..") for part in parts):
            raise ValueError(
                f"invalid tracker key {key!r}: use a trial index or names separated by `/`"
            )
        return f"{self._tracker_base}/{name}.json"

    def put(self, key: KeyType, **results: ResultType) -> None:
        """Writes ``results`` as JSON to ``{tracker_base}/{key}.json``."""
        import fsspec  # lazy: fsspec ~70 ms; only apps that put results

        fs, fs_path = fsspec.core.url_to_fs(self._path(key))
        fs.makedirs(fs_path.rpartition("/")[0] or "/", exist_ok=True)
        with fs.open(fs_path, "w") as f:
            json.dump(results, f, indent=2)

    def get(self, key: KeyType) -> dict[str, ResultType]:
        """Reads ``{tracker_base}/{key}.json``; ``{}`` if it does not exist."""
        import fsspec  # lazy: fsspec ~70 ms; only apps that get results

        fs, fs_path = fsspec.core.url_to_fs(self._path(key))
        try:
            with fs.open(fs_path, "r") as f:
                results: dict[str, ResultType] = json.load(f)
        except FileNotFoundError:
            return {}
        return results
