"""The tracker API: metadata, artifacts and lineage of runs, from launchers and from inside jobs.

A job activates trackers through the environment the runner injects into every replica
(``TORCHX_TRACKERS``, ``TORCHX_TRACKER_<NAME>_CONFIG``, ``TORCHX_JOB_ID``, ``TORCHX_PARENT_RUN_ID``)
and records through :py:meth:`AppRun.run_from_env`.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from torchx import plugins
from torchx.tracker._lineage import (
    Lineage,
    LineageEdge,
    TrackerArtifact,
    TrackerSource,
    build_lineage,
)
from torchx.util.modules import load_module

__all__ = [
    "AppRun",
    "AppRunTrackableSource",
    "Lineage",
    "LineageEdge",
    "TrackerArtifact",
    "TrackerBase",
    "TrackerSource",
    "build_lineage",
    "build_trackers",
    "tracker_config_env_var_name",
    "trackers_from_environ",
    "ENV_TORCHX_TRACKERS",
    "ENV_TORCHX_PARENT_RUN_ID",
    "ENV_TORCHX_JOB_ID",
]

logger: logging.Logger = logging.getLogger(__name__)

ENV_TORCHX_TRACKERS = "TORCHX_TRACKERS"
ENV_TORCHX_PARENT_RUN_ID = "TORCHX_PARENT_RUN_ID"
ENV_TORCHX_JOB_ID = "TORCHX_JOB_ID"
UNDEFINED_RUN_ID = "<UNDEFINED>"


@dataclass
class AppRunTrackableSource:
    """An artifact of a parent :py:class:`AppRun`, usable as a source of another run."""

    parent: AppRun
    artifact_name: str | None


class TrackerBase(ABC):
    """The interface every tracker backend implements (eight methods, as in TorchX)."""

    @abstractmethod
    def add_artifact(
        self, run_id: str, name: str, path: str, metadata: Mapping[str, object] | None = None
    ) -> None:
        """Records artifact ``name`` at ``path`` for ``run_id``."""

    @abstractmethod
    def artifacts(self, run_id: str) -> Mapping[str, TrackerArtifact]:
        """Returns the artifacts of ``run_id`` by name (the last one recorded per name wins)."""

    @abstractmethod
    def add_metadata(self, run_id: str, **kwargs: object) -> None:
        """Merges ``kwargs`` into the metadata of ``run_id``."""

    @abstractmethod
    def metadata(self, run_id: str) -> Mapping[str, object]:
        """Returns the metadata of ``run_id``."""

    @abstractmethod
    def add_source(self, run_id: str, source_id: str, artifact_name: str | None = None) -> None:
        """Records that ``run_id`` was produced from ``source_id`` (or one of its artifacts)."""

    @abstractmethod
    def sources(self, run_id: str, artifact_name: str | None = None) -> Iterable[TrackerSource]:
        """Returns the sources of ``run_id``, optionally only those naming ``artifact_name``."""

    @abstractmethod
    def lineage(self, run_id: str) -> Lineage:
        """Returns the parents and descendants of ``run_id``, transitively."""

    @abstractmethod
    def run_ids(self, **kwargs: str) -> Iterable[str]:
        """Returns the tracked run ids (``parent_run_id=`` keeps the children of that run)."""


def tracker_config_env_var_name(entrypoint_key: str) -> str:
    """Returns ``TORCHX_TRACKER_<NAME>_CONFIG`` for a tracker name."""
    return f"TORCHX_TRACKER_{entrypoint_key.upper()}_CONFIG"


def _tracker_factories() -> Mapping[str, Any]:
    registered = plugins.registry().get(plugins.PluginType.TRACKER)
    if not registered:
        logger.info("no 'torchx.tracker' plugins registered")
    return registered


def _resolve_factory(name: str, factories: Mapping[str, Any]) -> Any:
    if name in factories:
        return factories[name]
    try:
        return load_module(name)
    except (ImportError, AttributeError, ValueError):
        return None


def build_trackers(factory_and_config: Mapping[str, str | None]) -> list[TrackerBase]:
    """Builds trackers from ``{name: config}``.

    Each name is a registered tracker (entry-point group ``torchx.tracker`` or namespace package
    ``torchx_plugins.tracker``) or a ``module:factory`` path. Unresolvable or non-callable
    factories are skipped with a warning that suggests close matches, as in TorchX.

    Args:
        factory_and_config: tracker name -> config string passed to its factory (or None).

    Returns:
        The trackers, in the given order.
    """
    factories = _tracker_factories()
    trackers: list[TrackerBase] = []
    for name, config in factory_and_config.items():
        factory = _resolve_factory(name, factories)
        if not callable(factory):
            import difflib  # lazy: difflib ~14 ms here, error messages only

            close = difflib.get_close_matches(name, list(factories), n=1)
            hint = f" Did you mean `{close[0]}`?" if close else ""
            logger.warning(
                "tracker `%s` is neither a registered tracker (%s) nor a `module:factory` path;"
                " skipping it.%s",
                name,
                ", ".join(sorted(factories)) or "none registered",
                hint,
            )
            continue
        trackers.append(factory(config))
    return trackers


def _names_from_env(value: str) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()]


def _extract_tracker_name_and_config_from_environ() -> dict[str, str | None]:
    """Returns ``{tracker name: config or None}`` from ``TORCHX_TRACKERS`` and the config vars."""
    names = _names_from_env(os.environ.get(ENV_TORCHX_TRACKERS, ""))
    return {n: os.environ.get(tracker_config_env_var_name(n)) for n in names}


def trackers_from_environ() -> list[TrackerBase]:
    """Builds the trackers named in ``TORCHX_TRACKERS`` and configured by the environment."""
    entries = _extract_tracker_name_and_config_from_environ()
    return build_trackers(entries) if entries else []


@dataclass
class AppRun:
    """The run of the current job, as the job itself sees it.

    Attributes:
        id: the run id (``TORCHX_JOB_ID``: ``scheduler://session/app_id``).
        backends: the trackers every call is forwarded to.
    """

    id: str
    backends: Iterable[TrackerBase]

    @staticmethod
    @lru_cache(maxsize=1)
    def run_from_env() -> AppRun:
        """Returns the (cached) run of this process, built from the environment.

        The id is ``$TORCHX_JOB_ID`` (``<UNDEFINED>`` outside a torchx job). When
        ``TORCHX_PARENT_RUN_ID`` is set, the parent is recorded as a source on every backend.
        """
        run_id = os.environ.get(ENV_TORCHX_JOB_ID, UNDEFINED_RUN_ID)
        run = AppRun(id=run_id, backends=trackers_from_environ())
        parent = os.environ.get(ENV_TORCHX_PARENT_RUN_ID)
        if parent:
            run.add_source(parent, artifact_name=None)
        return run

    def add_metadata(self, **kwargs: object) -> None:
        """Adds metadata to this run on every backend."""
        for backend in self.backends:
            backend.add_metadata(self.id, **kwargs)

    def add_artifact(
        self, name: str, path: str, metadata: Mapping[str, object] | None = None
    ) -> None:
        """Records an artifact of this run on every backend."""
        for backend in self.backends:
            backend.add_artifact(self.id, name, path, metadata)

    def add_source(self, source_id: str, artifact_name: str | None = None) -> None:
        """Records a source (parent run) of this run on every backend."""
        for backend in self.backends:
            backend.add_source(self.id, source_id, artifact_name)

    def job_id(self) -> str:
        """Returns this run's id."""
        return self.id

    def sources(self) -> Iterable[AppRunTrackableSource]:
        """Returns the sources of this run as recorded by the first backend."""
        for backend in self.backends:
            return [
                AppRunTrackableSource(AppRun(s.source_run_id, self.backends), s.artifact_name)
                for s in backend.sources(self.id)
            ]
        return []

    def children(self) -> list[AppRun]:
        """Returns the runs that list this run as a source (first backend), sharing its backends."""
        for backend in self.backends:
            return [AppRun(c, self.backends) for c in backend.run_ids(parent_run_id=self.id)]
        return []
