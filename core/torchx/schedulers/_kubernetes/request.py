"""The kubernetes request object (``KubernetesJob``) and its YAML rendering."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchx.schedulers._kubernetes.render import dump_yaml, to_plain

__all__ = ["KubernetesJob", "render_yaml", "sanitize_for_serialization"]


def sanitize_for_serialization(obj: object) -> Any:
    """Serialize kubernetes models (possibly nested in dicts and lists) to plain data.

    Args:
        obj: models or plain data.

    Returns:
        JSON-ready data with the API's camelCase keys and ``None`` attributes left out.
    """
    return to_plain(obj)


def render_yaml(data: Any) -> str:
    """``yaml.dump`` with sorted keys (TorchX's layout); see :func:`dump_yaml`."""
    return dump_yaml(data)


@dataclass
class KubernetesJob:
    """A dry-run request: what would be submitted to the cluster.

    Attributes:
        images_to_push: local image -> ``(repository, tag)`` to push before submitting.
        resource: the manifest; in volcano mode the Volcano Job dict whose task templates are
            ``V1Pod`` objects.
    """

    images_to_push: dict[str, tuple[str, str]] = field(default_factory=dict)
    resource: Any = field(default_factory=dict)

    def __str__(self) -> str:
        return render_yaml(sanitize_for_serialization(self.resource))

    def __repr__(self) -> str:
        return str(self)
