"""CUDA helpers that do not make torch a dependency of torchx."""

from __future__ import annotations

__all__ = ["has_cuda_devices"]


def has_cuda_devices() -> bool:
    """Returns whether tensors can be put on a CUDA device here.

    True only when a CUDA-enabled torch is installed *and* the host has at least one CUDA
    device (``torch.cuda.is_available()`` alone is not enough). False without torch.
    """
    try:
        import torch  # lazy: an optional extra (the examples), absent here
    except ImportError:
        return False
    return bool(torch.cuda.is_available() and torch.cuda.device_count() > 0)
