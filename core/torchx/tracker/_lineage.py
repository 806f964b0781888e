"""Lineage: the transitive graph of runs linked by ``add_source``, up and down.

The records a tracker returns (:class:`TrackerSource`, :class:`TrackerArtifact`) live here with
the lineage that holds them; :mod:`torchx.tracker.api` re-exports them. :func:`build_lineage`
reads any object with ``sources``, ``run_ids`` and ``artifacts`` (a ``TrackerBase``), so this
module never imports the API.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "Lineage",
    "LineageEdge",
    "LineageReader",
    "TrackerArtifact",
    "TrackerSource",
    "build_lineage",
]


@dataclass
class TrackerSource:
    """A source (parent) of a run.

    Attributes:
        source_run_id: the parent run id.
        artifact_name: the parent's artifact that was used, or None for the run as a whole.
    """

    source_run_id: str
    artifact_name: str | None


@dataclass
class TrackerArtifact:
    """An artifact a run produced (a checkpoint, a dataset, a report).

    Attributes:
        name: the artifact's name within its run.
        path: where it lives (any fsspec URL).
        metadata: free-form metadata.
    """

    name: str
    path: str
    metadata: Mapping[str, object] | None


class LineageReader(Protocol):
    """What :func:`build_lineage` reads: the query methods of a ``TrackerBase``."""

    def sources(self, run_id: str, artifact_name: str | None = None) -> Iterable[TrackerSource]:
        """The sources of ``run_id``."""
        ...

    def run_ids(self, **kwargs: str) -> Iterable[str]:
        """The run ids matching ``kwargs`` (e.g. ``parent_run_id``)."""
        ...

    def artifacts(self, run_id: str) -> Mapping[str, TrackerArtifact]:
        """The artifacts of ``run_id``, by name."""
        ...


@dataclass(frozen=True)
class LineageEdge:
    """One ``add_source`` link: ``child`` was produced from ``parent`` (or one of its artifacts).

    Attributes:
        parent: the source run id.
        child: the run that consumed the source.
        artifact_name: the parent's artifact the child read, or None for the run as a whole.
    """

    parent: str
    child: str
    artifact_name: str | None = None


@dataclass
class Lineage:
    """Where a run came from and what came of it, transitively.

    TorchX declares ``Lineage`` as an empty class; this one is filled in by ``TrackerBase.lineage``.

    Attributes:
        run_id: the run the lineage was asked for.
        ancestors: every run upstream of ``run_id``, nearest first (breadth-first).
        descendants: every run downstream of ``run_id``, nearest first.
        edges: every link between the runs above (parent -> child, with the artifact name).
        artifacts: the artifacts of ``run_id`` and of every ancestor and descendant, by run id.
    """

    run_id: str = ""
    ancestors: list[str] = field(default_factory=list)
    descendants: list[str] = field(default_factory=list)
    edges: list[LineageEdge] = field(default_factory=list)
    artifacts: dict[str, Mapping[str, TrackerArtifact]] = field(default_factory=dict)

    @property
    def parents(self) -> list[str]:
        """Direct parents of ``run_id``."""
        return _unique(e.parent for e in self.edges if e.child == self.run_id)

    @property
    def children(self) -> list[str]:
        """Direct children of ``run_id``."""
        return _unique(e.child for e in self.edges if e.parent == self.run_id)

    def to_json(self) -> dict[str, object]:
        """A JSON-serialisable dict of this lineage."""
        return {
            "run_id": self.run_id,
            "ancestors": list(self.ancestors),
            "descendants": list(self.descendants),
            "edges": [
                {"parent": e.parent, "child": e.child, "artifact_name": e.artifact_name}
                for e in self.edges
            ],
            "artifacts": {
                run: {
                    name: {"path": a.path, "metadata": dict(a.metadata or {})}
                    for name, a in arts.items()
                }
                for run, arts in self.artifacts.items()
            },
        }


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _walk(
    start: str, neighbours: Callable[[str], Iterable[tuple[str, str | None]]], up: bool
) -> tuple[list[str], list[LineageEdge]]:
    """Breadth-first walk from ``start``; cycles and diamonds are visited once."""
    seen = {start}
    order: list[str] = []
    edges: list[LineageEdge] = []
    queue = deque([start])
    while queue:
        run = queue.popleft()
        for other, artifact in neighbours(run):
            edge = LineageEdge(other, run, artifact) if up else LineageEdge(run, other, artifact)
            if edge not in edges:
                edges.append(edge)
            if other not in seen:
                seen.add(other)
                order.append(other)
                queue.append(other)
    return order, edges


def build_lineage(
    tracker: LineageReader,
    run_id: str,
    children_of: Callable[[str], Iterable[tuple[str, str | None]]] | None = None,
) -> Lineage:
    """Computes the lineage of ``run_id`` from a tracker's ``sources`` and ``run_ids`` methods.

    Args:
        tracker: the tracker to read (a ``TrackerBase``).
        run_id: the run to trace.
        children_of: ``run -> [(child, artifact_name)]``; defaults to scanning
            ``tracker.run_ids(parent_run_id=run)`` and the children's sources. Backends that index
            descendants pass a faster one.

    Returns:
        The filled-in Lineage.
    """

    def parents_of(run: str) -> Iterable[tuple[str, str | None]]:
        sources: Iterable[TrackerSource] = tracker.sources(run)
        return [(s.source_run_id, s.artifact_name) for s in sources]

    def default_children(run: str) -> Iterable[tuple[str, str | None]]:
        out: list[tuple[str, str | None]] = []
        for child in tracker.run_ids(parent_run_id=run):
            names = [s.artifact_name for s in tracker.sources(child) if s.source_run_id == run]
            out.extend((child, name) for name in names or [None])
        return out

    ancestors, up_edges = _walk(run_id, parents_of, up=True)
    descendants, down_edges = _walk(run_id, children_of or default_children, up=False)
    edges = up_edges + [e for e in down_edges if e not in up_edges]
    artifacts = {run: tracker.artifacts(run) for run in [run_id, *ancestors, *descendants]}
    return Lineage(run_id, ancestors, descendants, edges, artifacts)
