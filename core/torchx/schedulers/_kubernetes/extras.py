"""Pod settings beyond TorchX: image pull secrets and tolerations (run options)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from torchx.schedulers._kubernetes.models import new

__all__ = ["TAINT_EFFECTS", "add_pod_extras", "parse_toleration"]

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _split_toleration(text: str) -> tuple[str, str | None, str]:
    """``(key, value or None, effect or "")`` of ``key[=value][:Effect]``, ``key:value:Effect``."""
    parts = text.split(":")
    if len(parts) > 3:
        raise ValueError(f"toleration `{text}` has too many `:`; write key[=value][:Effect]")
    if len(parts) == 3:  # key:value:Effect, for -cfg where `=` separates run options
        return parts[0], parts[1], parts[2]
    spec, effect = parts[0], parts[1] if len(parts) == 2 else ""
    key, eq, value = spec.partition("=")
    return key, value if eq else None, effect


def parse_toleration(text: str) -> Any:
    """Parse a toleration into a ``V1Toleration``.

    Forms: ``key[=value][:Effect]`` (kubectl's taint syntax) or ``key:value:Effect`` (for
    ``-cfg``, where ``=`` separates run options; ``key:value:`` tolerates every effect). With a
    value the taint must match it (operator ``Equal``), without one any value does (``Exists``);
    without an effect every effect is tolerated.

    Args:
        text: e.g. ``nvidia.com/gpu:NoSchedule``, ``pool=train:NoExecute``, ``pool:train:``.

    Returns:
        The toleration.

    Raises:
        ValueError: the key is empty or the effect unknown (with the closest valid effect).
    """
    key, value, effect = _split_toleration(text)
    if not key.strip():
        raise ValueError(f"toleration `{text}` has no key; write it as key[=value][:Effect]")
    if effect and effect not in TAINT_EFFECTS:
        close = difflib.get_close_matches(effect, TAINT_EFFECTS, n=1)
        hint = f"did you mean `{close[0]}`?" if close else f"use one of {', '.join(TAINT_EFFECTS)}"
        raise ValueError(f"toleration `{text}` has an unknown effect `{effect}`: {hint}")
    return new(
        "V1Toleration",
        key=key.strip(),
        operator="Exists" if value is None else "Equal",
        value=value,
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
