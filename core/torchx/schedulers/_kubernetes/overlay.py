"""Role pod overlays (``get_overlay(role, "kubernetes", "V1Pod")``) applied to a built pod."""

from __future__ import annotations

from typing import Any

from torchx.schedulers._kubernetes.models import api_client
from torchx.schedulers._kubernetes.render import to_plain
from torchx.specs.overlays import apply_overlay

__all__ = ["apply_pod_overlay"]


def apply_pod_overlay(pod: Any, overlay: dict[str, Any]) -> None:
    """Merge ``overlay`` into ``pod`` in place; only ``spec`` and ``metadata`` are copied back.

    The pod is serialized (camelCase keys, as in the YAML), merged with the overlay operators
    of :func:`torchx.specs.overlays.apply_overlay`, then read back into model classes, so an
    overlay may use any pod field the kubernetes client knows.

    Args:
        pod: a ``V1Pod``.
        overlay: the overlay (camelCase keys).

    Raises:
        TypeError: the overlay's structure does not match the pod's.
        ValueError: a field value is not valid for its model type.
    """
    data = to_plain(pod)
    apply_overlay(data, overlay)
    merged = _deserialize(data, "V1Pod")
    pod.spec = merged.spec
    pod.metadata = merged.metadata


def _deserialize(data: Any, kind: str) -> Any:
    # the public ``ApiClient.deserialize`` wants an HTTP response; this is the same code path
    client = api_client()
    return client._ApiClient__deserialize(data, kind)
