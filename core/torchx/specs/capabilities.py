"""Typed ``Resource.capabilities`` keys (:class:`CapabilityKey`), at TorchX's module path."""

from torchx.specs._resource import CapabilityKey

__all__ = ["CapabilityKey"]
