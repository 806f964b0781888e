"""Well-known ``AppDef.metadata`` keys and values, at TorchX's module path."""

from torchx.specs._constants import NA, TORCHX_CONTEXT_NAME, app_metadata

__all__ = ["NA", "TORCHX_CONTEXT_NAME", "app_metadata"]
