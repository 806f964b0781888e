"""The run order and tracker parents of a validated pipeline (private)."""

from __future__ import annotations

from typing import Optional

from torchx.workflow._graph import direct_upstream, topo_order, upstream
from torchx.workflow.model import Pipeline

__all__ = ["dependencies", "order", "parent_of"]


def dependencies(pipeline: Pipeline) -> dict[str, list[str]]:
    """Returns ``{step: [direct upstream steps]}`` (redundant edges removed).

    Args:
        pipeline: a validated pipeline (no cycles).
    """
    return direct_upstream(upstream(pipeline.steps))


def order(pipeline: Pipeline) -> list[str]:
    """Returns the steps in run order (upstream first, else definition order).

    Args:
        pipeline: a validated pipeline.
    """
    return topo_order(upstream(pipeline.steps))


def parent_of(pipeline: Pipeline, name: str) -> Optional[str]:
    """Returns the step whose run is the tracker parent of ``name`` (None for a root step).

    Args:
        pipeline: a validated pipeline.
        name: the step.
    """
    step = pipeline.steps[name]
    if step.parent:
        return step.parent
    direct = dependencies(pipeline)[name]
    return direct[0] if direct else None
