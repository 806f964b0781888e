"""An MLflow tracker backend (extra ``[mlflow]``, which installs ``mlflow-skinny``).

Each torchx run (``scheduler://session/app_id``) maps to one MLflow run in one experiment, found by
its ``torchx.run_id`` tag. Metadata, artifact references and sources are stored as MLflow tags, so
they show up in the MLflow UI and stay queryable:

* ``torchx.metadata.<key>``: the JSON value of a metadata key;
* ``torchx.artifact.<name>``: ``{"path": ..., "metadata": ...}`` (a reference, nothing is uploaded);
* ``torchx.source.<b32(source run id)>``: the JSON list of artifact names read from that source.

Activate it like any tracker::

    TORCHX_TRACKERS=mlflow TORCHX_TRACKER_MLFLOW_CONFIG=file:///tmp/mlruns

The config is a tracking URI, optionally followed by ``#experiment-name`` (default ``torchx``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from torchx.tracker.api import (
    Lineage,
    TrackerArtifact,
    TrackerBase,
    TrackerSource,
    build_lineage,
)
from torchx.tracker.backend.fsspec import _check_artifact_name as _check_name
from torchx.tracker.backend.fsspec import _decode_or_none, _encode_torchx_run_id

__all__ = ["MLflowTracker", "create"]

RUN_ID_TAG = "torchx.run_id"
META = "torchx.metadata."
ARTIFACT = "torchx.artifact."
SOURCE = "torchx.source."
DEFAULT_EXPERIMENT = "torchx"


def _import_client() -> Any:
    try:
        from mlflow.tracking import MlflowClient  # lazy: mlflow ~950 ms, an optional extra
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "the mlflow tracker needs MLflow: pip install 'torchx-flow[mlflow]'"
        ) from e
    return MlflowClient


class MLflowTracker(TrackerBase):
    """Records torchx runs in MLflow.

    Args:
        tracking_uri: the MLflow tracking URI (``file:///path``, ``http://127.0.0.1:5000``, ...).
        experiment_name: the experiment holding the runs (created when missing).
        client: an ``MlflowClient`` to use instead of creating one.
    """

    def __init__(
        self, tracking_uri: str, experiment_name: str = DEFAULT_EXPERIMENT, client: Any = None
    ) -> None:
        self._client = client or _import_client()(tracking_uri=tracking_uri)
        exp = self._client.get_experiment_by_name(experiment_name)
        self._experiment_id = (
            exp.experiment_id if exp else self._client.create_experiment(experiment_name)
        )

    def _runs(self) -> list[Any]:
        runs: list[Any] = []
        token = None
        while True:
            page = self._client.search_runs(
                [self._experiment_id], max_results=1000, page_token=token
            )
            runs.extend(r for r in page if RUN_ID_TAG in r.data.tags)
            token = getattr(page, "token", None)
            if not token:
                return runs

    def _find(self, run_id: str) -> Any | None:
        escaped = run_id.replace("'", "\\'")
        found = self._client.search_runs(
            [self._experiment_id], filter_string=f"tags.`{RUN_ID_TAG}` = '{escaped}'"
        )
        return found[0] if found else None

    def _mlflow_run_id(self, run_id: str) -> str:
        run = self._find(run_id)
        if run is None:
            run = self._client.create_run(
                self._experiment_id, tags={RUN_ID_TAG: run_id}, run_name=run_id.rsplit("/", 1)[-1]
            )
        return str(run.info.run_id)

    def _tags(self, run_id: str) -> dict[str, str]:
        run = self._find(run_id)
        return dict(run.data.tags) if run else {}

    def add_artifact(
        self, run_id: str, name: str, path: str, metadata: Mapping[str, object] | None = None
    ) -> None:
        """Records an artifact reference as the tag ``torchx.artifact.<name>``."""
        _check_name(name)
        value = json.dumps({"path": path, "metadata": dict(metadata or {})})
        self._client.set_tag(self._mlflow_run_id(run_id), ARTIFACT + name, value)

    def artifacts(self, run_id: str) -> Mapping[str, TrackerArtifact]:
        """Returns the artifact references of a run."""
        out: dict[str, TrackerArtifact] = {}
        for key, value in self._tags(run_id).items():
            if key.startswith(ARTIFACT):
                data = json.loads(value)
                name = key[len(ARTIFACT) :]
                out[name] = TrackerArtifact(name, data["path"], data["metadata"])
        return out

    def add_metadata(self, run_id: str, **kwargs: object) -> None:
        """Stores each metadata key as the tag ``torchx.metadata.<key>`` (JSON value)."""
        mlflow_id = self._mlflow_run_id(run_id)
        for key, value in kwargs.items():
            self._client.set_tag(mlflow_id, META + key, json.dumps(value, default=str))

    def metadata(self, run_id: str) -> Mapping[str, object]:
        """Returns the metadata of a run."""
        tags = self._tags(run_id)
        return {k[len(META) :]: json.loads(v) for k, v in tags.items() if k.startswith(META)}

    def add_source(self, run_id: str, source_id: str, artifact_name: str | None = None) -> None:
        """Records a source; the tag ``torchx.source.<b32(source)>`` lists its artifact names."""
        _check_name(artifact_name)
        key = SOURCE + _encode_torchx_run_id(source_id).rstrip("=")
        names: list[str] = json.loads(self._tags(run_id).get(key, "[]"))
        if (artifact_name or "") not in names:
            names.append(artifact_name or "")
        self._client.set_tag(self._mlflow_run_id(run_id), key, json.dumps(names))

    def sources(self, run_id: str, artifact_name: str | None = None) -> Iterable[TrackerSource]:
        """Returns the sources of a run."""
        return _sources_from_tags(self._tags(run_id), artifact_name)

    def lineage(self, run_id: str) -> Lineage:
        """Returns the parents and descendants of a run, transitively."""
        return build_lineage(self, run_id)

    def run_ids(self, **kwargs: str) -> Iterable[str]:
        """Returns the torchx run ids in the experiment (``parent_run_id=`` filters children)."""
        parent = kwargs.get("parent_run_id")
        out = []
        for run in self._runs():
            tags = run.data.tags
            if parent is None or any(s.source_run_id == parent for s in _sources_from_tags(tags)):
                out.append(tags[RUN_ID_TAG])
        return out


def _sources_from_tags(tags: Mapping[str, str], artifact: str | None = None) -> list[TrackerSource]:
    out = []
    for key, value in sorted(tags.items()):
        if not key.startswith(SOURCE):
            continue
        encoded = key[len(SOURCE) :]
        source = _decode_or_none(encoded + "=" * (-len(encoded) % 8))
        if source is None:
            continue
        for name in json.loads(value):
            if artifact is None or (name or None) == artifact:
                out.append(TrackerSource(source, name or None))
    return out


def create(config: str | None) -> MLflowTracker:
    """Creates an :py:class:`MLflowTracker` from ``TRACKING_URI[#experiment]``.

    Args:
        config: the tracking URI, optionally with ``#experiment-name``.

    Returns:
        The tracker.

    Raises:
        ValueError: no config given.
    """
    if not config:
        raise ValueError(
            "the mlflow tracker needs a tracking URI, e.g."
            " TORCHX_TRACKER_MLFLOW_CONFIG=file:///tmp/mlruns#my-experiment"
        )
    uri, _, experiment = config.partition("#")
    return MLflowTracker(uri, experiment or DEFAULT_EXPERIMENT)
