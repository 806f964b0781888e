"""TorchX's module path for the plugin registration decorators and named-resource helpers.

The definitions live in ``_register`` and ``_fractionals``; import them from
:mod:`torchx.plugins`.
"""

from torchx.plugins._fractionals import (
    EIGHTH,
    HALF,
    QUARTER,
    SIXTEENTH,
    WHOLE,
    halve_mem_down_to,
    powers_of_two_gpus,
)
from torchx.plugins._register import FRACTIONAL_TAG, NAME_TAG, register

__all__ = [
    "EIGHTH",
    "HALF",
    "QUARTER",
    "SIXTEENTH",
    "WHOLE",
    "halve_mem_down_to",
    "powers_of_two_gpus",
    "register",
    "resource_tags",
]


class resource_tags:
    """The ``Resource.tags`` keys that :meth:`register.named_resource` factories set."""

    RESOURCE_NAME: str = NAME_TAG
    """The registered name that produced the resource."""

    IS_FRACTIONAL: str = FRACTIONAL_TAG
    """True when the resource is a fractional slice of a whole host."""
