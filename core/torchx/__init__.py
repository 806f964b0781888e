"""torchx-flow: a TorchX-compatible job launcher (import name ``torchx``).

``torchx.IMAGE`` is resolved lazily so that ``import torchx`` stays cheap: the
``torchx.version`` entry point (``get_torchx_image = module:fn``) may replace it.
"""

from __future__ import annotations

from torchx import version
from torchx.version import __version__

__all__ = ["__version__", "IMAGE"]


def _resolve_image() -> str:
    from torchx.util.entrypoints import (  # lazy: ~2 ms; import torchx (every supervisor) skips it
        load,
    )

    fn = load("torchx.version", "get_torchx_image", default=None)
    if callable(fn):
        return str(fn(version.__version__))
    return version.TORCHX_IMAGE


def __getattr__(name: str) -> str:
    if name == "IMAGE":
        image = _resolve_image()
        globals()["IMAGE"] = image
        return image
    raise AttributeError(f"module 'torchx' has no attribute {name!r}")
