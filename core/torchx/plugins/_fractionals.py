"""Fraction helpers for ``@register.named_resource(fractionals=...)``.

A fractionals spec maps a fraction of the whole host to the suffix of the generated name:
``{1.0: "8", 0.5: "4"}`` on ``gpu_host`` registers ``gpu_host_8`` and ``gpu_host_4``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchx.specs.api import Resource

__all__ = [
    "EIGHTH",
    "HALF",
    "QUARTER",
    "SIXTEENTH",
    "WHOLE",
    "halve_mem_down_to",
    "powers_of_two_gpus",
]

WHOLE = 1.0
HALF = 0.5
QUARTER = 0.25
EIGHTH = 0.125
SIXTEENTH = 0.0625

_GiB = 1024


def powers_of_two_gpus(resource: Resource) -> dict[float, str]:
    """Fractions that halve the GPU count while it stays whole, suffixed by the GPU count.

    An 8-GPU resource gives ``{1.0: "8", 0.5: "4", 0.25: "2", 0.125: "1"}``; a 6-GPU one gives
    ``{1.0: "6", 0.5: "3"}``; a CPU-only one gives ``{}``.

    Args:
        resource: the whole-host resource.

    Returns:
        ``{fraction: suffix}``.
    """
    total = resource.gpu
    out: dict[float, str] = {}
    gpus = total
    while gpus >= 1:
        out[gpus / total] = str(gpus)
        if gpus % 2:
            break
        gpus //= 2
    return out


def halve_mem_down_to(minGiB: float) -> Callable[[Resource], dict[float, str]]:
    """Returns a fractionals function that halves memory while it stays >= ``minGiB``.

    The suffix is the memory of the fraction in whole GiB followed by ``gb``: a 64 GiB host
    with ``minGiB=16`` gives ``{1.0: "64gb", 0.5: "32gb", 0.25: "16gb"}``.

    Args:
        minGiB: the smallest memory (GiB) a generated fraction may have; must be > 0.

    Returns:
        A function ``(whole Resource) -> {fraction: suffix}``.

    Raises:
        ValueError: ``minGiB`` is not positive.
    """
    if minGiB <= 0:
        raise ValueError(f"halve_mem_down_to(minGiB={minGiB}): minGiB must be > 0")

    def fractions(resource: Resource) -> dict[float, str]:
        out: dict[float, str] = {}
        fraction = WHOLE
        while resource.memMB * fraction >= minGiB * _GiB:
            out[fraction] = f"{int(resource.memMB * fraction // _GiB)}gb"
            fraction /= 2
        return out

    return fractions
