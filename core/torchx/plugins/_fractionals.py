"""Fraction helpers for ``@register.named_resource(fractionals=...)``.

A fractionals spec maps a fraction of the whole host to the suffix of the generated name:
``{1.0: "8", 0.5: "4"}`` on ``gpu_host`` registers ``gpu_host_8`` and ``gpu_host_4``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchx.plugins._types import ResourceLike

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


def powers_of_two_gpus(resource: ResourceLike) -> dict[float, str]:
    """Fractions that halve the GPU count down to one GPU, suffixed by the GPU count.

    An 8-GPU resource gives ``{1.0: "8", 0.5: "4", 0.25: "2", 0.125: "1"}`` (so
    ``register.named_resource(fractionals=powers_of_two_gpus)`` on ``gpu`` registers ``gpu_8``,
    ``gpu_4``, ``gpu_2`` and ``gpu_1``).

    Args:
        resource: the whole-host resource.

    Returns:
        ``{fraction: suffix}``.

    Raises:
        ValueError: the GPU count is not a positive power of two.
    """
    total = resource.gpu
    if total <= 0 or total & (total - 1):
        raise ValueError(
            f"powers_of_two_gpus needs a resource whose gpu count is a power of two > 0"
            f" (got gpu={total}); give explicit fractionals instead"
        )
    out: dict[float, str] = {}
    gpus, fraction = total, WHOLE
    while gpus >= 1:
        out[fraction] = str(gpus)
        gpus //= 2
        fraction /= 2
    return out


def _odd_part(n: int) -> int:
    while n > 0 and n % 2 == 0:
        n //= 2
    return n


def halve_mem_down_to(*, minGiB: int) -> Callable[[ResourceLike], dict[float, str]]:
    """Returns a fractionals function that halves the memory while it stays >= ``minGiB``.

    The suffix is the memory of the fraction in GiB: a 64 GiB host with ``minGiB=16`` gives
    ``{1.0: "64", 0.5: "32", 0.25: "16"}``.

    Args:
        minGiB: the smallest memory (GiB) a generated fraction may have.

    Returns:
        A function ``(whole Resource) -> {fraction: suffix}``; it raises ``ValueError`` when the
        memory is not a positive whole number of GiB, or ``minGiB`` is below its odd part
        (halving further would give fractional GiB).
    """

    def fractions(resource: ResourceLike) -> dict[float, str]:
        mem_mb = resource.memMB
        if mem_mb <= 0 or mem_mb % _GiB:
            raise ValueError(
                f"halve_mem_down_to needs a resource with a positive whole number of GiB"
                f" (got memMB={mem_mb})"
            )
        mem_gib = mem_mb // _GiB
        odd = _odd_part(mem_gib)
        if minGiB < odd:
            raise ValueError(
                f"halve_mem_down_to(minGiB={minGiB}): minGiB must be >= {odd}, the odd part of"
                f" {mem_gib} GiB (halving below it gives fractional GiB)"
            )
        out: dict[float, str] = {}
        fraction = WHOLE
        while (gib := int(mem_gib * fraction)) >= minGiB:
            out[fraction] = str(gib)
            fraction /= 2
        return out

    return fractions
