"""The kubernetes request object (``KubernetesJob``) and its YAML rendering (both modes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchx.schedulers._kubernetes.render import dump_yaml_all, to_plain

__all__ = ["KubernetesJob", "sanitize_for_serialization"]

sanitize_for_serialization = to_plain
"""TorchX's name for the serializer: kubernetes models (nested in dicts and lists) -> plain data
with the API's camelCase keys, ``None`` attributes left out."""


@dataclass
class KubernetesJob:
    """A dry-run request: what would be submitted to the cluster.

    ``str()`` (what ``--dryrun`` prints) is the YAML of :meth:`manifests`, one document each.

    Attributes:
        images_to_push: local image -> ``(repository, tag)`` to push before submitting.
        resource: the manifest; in volcano mode the Volcano Job dict whose task templates are
            ``V1Pod`` objects, in plain mode a ``PlainRequest``.
    """

    images_to_push: dict[str, tuple[str, str]] = field(default_factory=dict)
    resource: Any = field(default_factory=dict)

    def manifests(self) -> list[Any]:
        """The objects to submit as plain data: here the one ``resource``."""
        return [to_plain(self.resource)]

    def __str__(self) -> str:
        return dump_yaml_all(self.manifests())

    def __repr__(self) -> str:
        return str(self)
