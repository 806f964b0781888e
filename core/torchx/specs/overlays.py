"""Overlays: patches for raw scheduler requests with fields that AppDef cannot express.

An overlay is stored in ``target.metadata[namespace][kind]`` (``target`` is a
``Role`` or an ``AppDef``) and the scheduler merges it into its request, e.g. the
kubernetes scheduler reads namespace ``"kubernetes"``, kind ``"V1Pod"``::

    set_overlay(role, "kubernetes", "V1Pod", {"spec": {"nodeSelector": {"a": "b"}}})
    set_overlay(role, "kubernetes", "V1Pod", {"spec": {PUT("tolerations"): []}})
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from torchx.specs._overlay_merge import DEL, JOIN, PUT, accumulate, apply_overlay, field_of

__all__ = [
    "set_overlay",
    "get_overlay",
    "apply_overlay",
    "validate_overlay",
    "OverlaySpec",
    "PUT",
    "JOIN",
    "DEL",
    "OVERLAYS_MARKER",
]

logger: logging.Logger = logging.getLogger(__name__)

OVERLAYS_MARKER = "__torchx_overlays__"
"""Stamped into a namespace that holds nested (``{kind: overlay}``) overlays."""
_FORMAT_KEY = OVERLAYS_MARKER  # TorchX's name for the marker

_KIND_NAME = re.compile(r"^[A-Z][A-Za-z0-9_]*$")


class _HasMetadata(Protocol):
    metadata: Any


def _check_kind(kind: str) -> None:
    if kind == OVERLAYS_MARKER:
        raise ValueError(f"`{OVERLAYS_MARKER}` is reserved and cannot be used as an overlay kind")


def set_overlay(target: _HasMetadata, namespace: str, kind: str, overlay: dict[str, Any]) -> None:
    """Accumulates ``overlay`` into ``target.metadata[namespace][kind]``.

    Args:
        target: a ``Role`` or ``AppDef``.
        namespace: the scheduler namespace (e.g. ``"kubernetes"``).
        kind: the request kind (e.g. ``"V1Pod"``).
        overlay: the overlay; for a field set twice the last operator wins.

    Raises:
        ValueError: for the reserved kind ``__torchx_overlays__``.
    """
    _check_kind(kind)
    ns = target.metadata.get(namespace)
    if not isinstance(ns, dict):
        if ns is not None:
            logger.warning(
                f"replacing the non-dict `metadata[{namespace!r}]` ({type(ns).__name__})"
                f" with overlays; set overlays only through `set_overlay`"
            )
        ns = {}
        target.metadata[namespace] = ns
    ns[OVERLAYS_MARKER] = True
    stored = ns.get(kind)
    if not isinstance(stored, dict):
        stored = ns[kind] = {}
    accumulate(stored, overlay)


def _tuple_loader() -> Any:
    import yaml  # lazy: yaml ~17 ms; runopts kubernetes skips it

    class _Loader(yaml.SafeLoader):
        pass

    def _tuple(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> tuple[Any, ...]:
        return tuple(loader.construct_sequence(node, deep=True))

    _Loader.add_constructor("tag:yaml.org,2002:python/tuple", _tuple)
    return _Loader


def _load_uri(uri: str) -> dict[str, Any]:
    import fsspec  # lazy: fsspec ~70 ms; runopts kubernetes skips it
    import yaml  # lazy: yaml ~17 ms; runopts kubernetes skips it

    with fsspec.open(uri, "r") as f:
        text = f.read()
    try:
        data = json.loads(text)
    except ValueError:
        data = yaml.load(text, Loader=_tuple_loader())  # a SafeLoader plus tuples
    if not isinstance(data, dict):
        raise ValueError(f"overlay file `{uri}` must contain a mapping, got {type(data).__name__}")
    return data


_load_overlay_file = _load_uri  # TorchX's name: loads a JSON/YAML overlay file (path or URI)


def _looks_nested(ns: dict[str, Any]) -> bool:
    return bool(ns) and all(
        _KIND_NAME.match(k) and isinstance(v, dict | str) for k, v in ns.items()
    )


def get_overlay(
    target: _HasMetadata, namespace: str, kind: str, *, flat_fallback: bool = True
) -> dict[str, Any]:
    """Returns the overlay stored for ``namespace``/``kind``, or ``{}``.

    A string namespace value is loaded as an fsspec URI (JSON, else YAML). An
    unmarked dict without ``kind`` is returned whole as a legacy flat overlay
    (with a warning) unless ``flat_fallback`` is False or it looks nested.

    Args:
        target: a ``Role`` or ``AppDef``.
        namespace: the scheduler namespace.
        kind: the request kind.
        flat_fallback: allow the legacy flat form.

    Returns:
        The overlay.

    Raises:
        ValueError: if a loaded overlay file is not a mapping.
    """
    _check_kind(kind)
    ns = target.metadata.get(namespace)
    if isinstance(ns, str):
        ns = _load_uri(ns)
    if not isinstance(ns, dict):
        return {}
    if ns.get(OVERLAYS_MARKER) or kind in ns:
        overlay = ns.get(kind)
        if overlay is None:  # a scheduler probing for a kind: not a problem
            kinds = [k for k in ns if k != OVERLAYS_MARKER]
            logger.debug("no `%s` overlay in `%s` (it has: %s)", kind, namespace, kinds)
        return overlay if isinstance(overlay, dict) else {}
    if flat_fallback and not _looks_nested(ns):
        logger.warning(
            f"`metadata[{namespace!r}]` is a legacy flat overlay; applying it to `{kind}`."
            f" Use `set_overlay(target, {namespace!r}, {kind!r}, overlay)` instead"
        )
        return ns
    return {}


def _has_path(overlay: dict[str, Any], path: list[str]) -> bool:
    fields = {field_of(k): v for k, v in overlay.items()}
    if path[0] not in fields:
        return False
    if len(path) == 1:
        return True
    child = fields[path[0]]
    return isinstance(child, dict) and _has_path(child, path[1:])


def validate_overlay(
    overlay: dict[str, Any],
    *,
    blocklist: Iterable[str] | None = None,
    forbidden_keys: Collection[str] | None = None,
    overlay_name: str = "overlay",
    suggestion: str = "",
) -> None:
    """Checks that an overlay does not set blocked attributes or misplaced keys.

    Args:
        overlay: the overlay to check.
        blocklist: (dotted) attributes that must be set on the role instead.
        forbidden_keys: top-level keys that do not belong in this overlay.
        overlay_name: the name used in messages.
        suggestion: appended to the message (what to do instead).

    Raises:
        ValueError: for a blocked attribute or a misplaced key.
    """
    tail = f" {suggestion}" if suggestion else ""
    misplaced = {field_of(k) for k in overlay} & set(forbidden_keys or ())
    if misplaced:
        raise ValueError(f"{overlay_name} overlay contains misplaced keys: {misplaced}.{tail}")
    blocked = [k for k in blocklist or () if _has_path(overlay, k.split("."))]
    if blocked:
        names = ", ".join(f"`{overlay_name}.{k}`" for k in blocked)
        raise ValueError(
            f"disallowed overlay attributes {names},"
            f" since they can be set directly on the role's attributes.{tail}"
        )


@dataclass(frozen=True)
class OverlaySpec:
    """A validated overlay slot: a namespace, a kind and blocked attributes.

    Args:
        namespace: the scheduler namespace (e.g. ``"kubernetes"``).
        kind: the request kind (e.g. ``"V1Pod"``).
        blocklist: attributes the overlay may not set.
    """

    namespace: str
    kind: str
    blocklist: tuple[str, ...] = ()

    def set(self, target: _HasMetadata, overlay: dict[str, Any]) -> None:
        """Validates ``overlay`` and accumulates it into ``target``."""
        validate_overlay(overlay, blocklist=self.blocklist, overlay_name=self.kind)
        set_overlay(target, self.namespace, self.kind, overlay)

    def get(self, target: _HasMetadata) -> dict[str, Any]:
        """Returns the validated (nested form only) overlay of ``target``, or ``{}``."""
        overlay = get_overlay(target, self.namespace, self.kind, flat_fallback=False)
        validate_overlay(overlay, blocklist=self.blocklist, overlay_name=self.kind)
        return overlay
