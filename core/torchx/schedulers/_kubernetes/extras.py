"""Pod settings beyond TorchX: image pull secrets and tolerations (run options)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from torchx.schedulers._kubernetes.models import new

__all__ = ["TAINT_EFFECTS", "add_pod_extras", "parse_toleration"]

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def parse_toleration(text: str) -> Any:
    """Parse ``key[=value][:Effect]`` (kubectl's taint syntax) into a ``V1Toleration``.

    ``key=value`` tolerates that exact taint (operator ``Equal``), ``key`` alone any value
    (``Exists``); without an effect every effect is tolerated.

    Args:
        text: e.g. ``nvidia.com/gpu:NoSchedule`` or ``pool=train:NoExecute``.

    Returns:
        The toleration.

    Raises:
        ValueError: the key is empty or the effect unknown (with the closest valid effect).
    """
    spec, _, effect = text.partition(":")
    key, eq, value = spec.partition("=")
    if not key.strip():
        raise ValueError(f"toleration `{text}` has no key; write it as key[=value][:Effect]")
    if effect and effect not in TAINT_EFFECTS:
        close = difflib.get_close_matches(effect, TAINT_EFFECTS, n=1)
        hint = f"did you mean `{close[0]}`?" if close else f"use one of {', '.join(TAINT_EFFECTS)}"
        raise ValueError(f"toleration `{text}` has an unknown effect `{effect}`: {hint}")
    return new(
        "V1Toleration",
        key=key.strip(),
        operator="Equal" if eq else "Exists",
        value=value if eq else None,
        effect=effect or None,
    )


def add_pod_extras(pod: Any, image_pull_secrets: Sequence[str], tolerations: Sequence[Any]) -> None:
    """Set image pull secrets and tolerations on ``pod`` (left unset when empty).

    Args:
        pod: a ``V1Pod``.
        image_pull_secrets: Secret names.
        tolerations: ``V1Toleration`` objects (see :func:`parse_toleration`).
    """
    if image_pull_secrets:
        pod.spec.image_pull_secrets = [
            new("V1LocalObjectReference", name=name) for name in image_pull_secrets
        ]
    if tolerations:
        pod.spec.tolerations = list(tolerations)
