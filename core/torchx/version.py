"""Version information for torchx-flow (import name ``torchx``)."""

from __future__ import annotations

__all__ = ["__version__", "TORCHX_IMAGE", "get_torchx_image"]

# Keep in sync with ``[project] version`` in pyproject.toml (checked by a test).
__version__ = "0.1.0"


def get_torchx_image(version: str = __version__) -> str:
    """Returns the default container image for a torchx version.

    Args:
        version: the torchx version string.

    Returns:
        ``ghcr.io/pytorch/torchx:{version}``.
    """
    return f"ghcr.io/pytorch/torchx:{version}"


TORCHX_IMAGE: str = get_torchx_image(__version__)
